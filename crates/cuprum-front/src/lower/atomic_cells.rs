//! cuda-oxide's typed atomic cells (`DeviceAtomicU32`, `BlockAtomicF32`, `SystemAtomicI64`,
//! and `core::sync::atomic::AtomicU32` as a system-scope one), made from raw pointers in
//! `unsafe` code: `let c = unsafe { &*(counter.as_ptr() as *const DeviceAtomicU32) };`, then
//! `c.fetch_add(1, AtomicOrdering::Relaxed)`, `c.load(Acquire)`, `c.store(v, Release)`,
//! `c.compare_exchange(cur, new, AcqRel, Relaxed)` and the other read-modify-writes, each an
//! IR atomic with the cell's scope and the call's ordering.
//!
//! Why it needs care: such a pointer may come from a read-only `&[T]` parameter, which the
//! optimizer and the PTX writer otherwise read through the non-coherent cache (`ld.nc`) and
//! treat as unchanging. So once a kernel is lowered, [`mark_atomic_writes`] makes every slice
//! parameter that an atomic may write a read-write one in the IR (all read-only slices where
//! an atomic's address is not provably inside one slice); the host still passes a
//! `&DeviceBuffer`, and the runtime orders the launch as a writer of it.

use cuprum_ir::{
    AddressSpace, Addresses, AtomicOp, Kernel, MemOrder, Op, ParamKind, Root, ScalarType as S,
    Scope, SliceAccess, Stmt,
};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// The element type and scope of a cell type named by `ty` (its last path segment), if it
/// is one.
pub(super) fn cell_type(ty: &syn::Type) -> Option<(S, Scope)> {
    let syn::Type::Path(p) = ty else { return None };
    let name = p.path.segments.last()?.ident.to_string();
    let (scope, rest) = if let Some(r) = name.strip_prefix("DeviceAtomic") {
        (Scope::Device, r)
    } else if let Some(r) = name.strip_prefix("BlockAtomic") {
        (Scope::Block, r)
    } else if let Some(r) = name.strip_prefix("SystemAtomic") {
        (Scope::System, r)
    } else {
        // `core::sync::atomic::AtomicU32`: atomic for the whole system, as cuda-oxide maps it.
        (Scope::System, name.strip_prefix("Atomic")?)
    };
    let elem = match rest {
        "U32" => S::U32,
        "I32" => S::I32,
        "U64" => S::U64,
        "I64" => S::I64,
        "F32" if scope != Scope::System || name.starts_with("System") => S::F32,
        "F64" if scope != Scope::System || name.starts_with("System") => S::F64,
        _ => return None,
    };
    Some((elem, scope))
}

/// `AtomicOrdering::Acquire`, `Ordering::Acquire`, or a bare `Acquire`.
fn ordering(e: &syn::Expr) -> Result<MemOrder> {
    let name = match e {
        syn::Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    };
    Ok(match name.as_deref() {
        Some("Relaxed") => MemOrder::Relaxed,
        Some("Acquire") => MemOrder::Acquire,
        Some("Release") => MemOrder::Release,
        Some("AcqRel") => MemOrder::AcqRel,
        Some("SeqCst") => MemOrder::SeqCst,
        _ => {
            return err(
                e.span(),
                "an atomic ordering must be written out (`AtomicOrdering::Relaxed`, `Acquire`, \
                 `Release`, `AcqRel` or `SeqCst`)",
            );
        }
    })
}

/// The one ordering a compare-exchange gets: its success ordering, strengthened by its
/// failure ordering's acquire (PTX's `atom.cas` has one).
fn join(success: MemOrder, failure: MemOrder) -> MemOrder {
    if success == MemOrder::SeqCst || failure == MemOrder::SeqCst {
        return MemOrder::SeqCst;
    }
    match (success.acquires() || failure.acquires(), success.releases()) {
        (true, true) => MemOrder::AcqRel,
        (true, false) => MemOrder::Acquire,
        (false, true) => MemOrder::Release,
        (false, false) => MemOrder::Relaxed,
    }
}

impl Lowerer<'_> {
    /// `ptr as *const DeviceAtomicU32`: a pointer to a cell at the same address.
    pub(super) fn cell_pointer(
        &mut self,
        c: &syn::ExprCast,
        target: &syn::TypePtr,
    ) -> Result<Option<Val>> {
        let Some((elem, scope)) = cell_type(&target.elem) else {
            return Ok(None);
        };
        match self.expr(&c.expr)? {
            Val::Ptr { addr, space, .. } | Val::AtomicCell { addr, space, .. } => {
                Ok(Some(Val::AtomicCell {
                    addr,
                    elem,
                    scope,
                    space,
                    ptr: true,
                }))
            }
            other => err(
                c.span(),
                format!(
                    "an atomic cell pointer is made from a raw pointer (`slice.as_ptr() as *const \
                     {}`), not {}",
                    source_text(&target.elem),
                    describe(&other)
                ),
            ),
        }
    }

    /// `*cell_ptr`: the cell itself; in `unsafe` code only, as rustc requires.
    pub(super) fn deref_cell_pointer(&mut self, v: Val, span: Span) -> Result<Val> {
        let Val::AtomicCell {
            addr,
            elem,
            scope,
            space,
            ptr: true,
        } = v
        else {
            return err(span, "cannot dereference an atomic cell");
        };
        if self.unsafe_depth == 0 && !self.kernel.is_unsafe {
            return err(
                span,
                "dereferencing a raw pointer to an atomic cell is `unsafe`: wrap it in `unsafe { .. }` \
                 and make sure the memory is valid and only accessed atomically meanwhile",
            );
        }
        Ok(Val::AtomicCell {
            addr,
            elem,
            scope,
            space,
            ptr: false,
        })
    }

    /// Methods of a cell (`load`, `store`, `fetch_*`, `swap`, `compare_exchange`), and `add`
    /// and friends of a pointer to one.
    pub(super) fn atomic_cell_method(&mut self, m: &syn::ExprMethodCall, cell: Val) -> Result<Val> {
        let Val::AtomicCell {
            addr,
            elem,
            scope,
            space,
            ptr,
        } = cell
        else {
            return err(m.span(), "expected an atomic cell");
        };
        let span = m.span();
        let method = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        if ptr {
            // Pointer arithmetic in cells, as on any raw pointer.
            let p = Val::Ptr {
                addr,
                elem,
                mutable: false,
                space,
            };
            return match self.pointer_method(m, p)? {
                Val::Ptr { addr, .. } => Ok(Val::AtomicCell {
                    addr,
                    elem,
                    scope,
                    space,
                    ptr: true,
                }),
                _ => err(
                    span,
                    "a pointer to an atomic cell supports `add`, `sub` and `offset`; \
                     dereference it (`&*ptr`, in `unsafe`) for its operations",
                ),
            };
        }
        match (method.as_str(), &args[..]) {
            ("load", [o]) => {
                let order = ordering(o)?;
                if matches!(order, MemOrder::Release | MemOrder::AcqRel) {
                    return err(o.span(), "an atomic load cannot be `Release` or `AcqRel`");
                }
                Ok(Val::Scalar(self.def(
                    Op::AtomicLoad {
                        space,
                        scope,
                        order,
                        ty: elem,
                        addr,
                    },
                    span,
                )?))
            }
            ("store", [v, o]) => {
                let order = ordering(o)?;
                if matches!(order, MemOrder::Acquire | MemOrder::AcqRel) {
                    return err(o.span(), "an atomic store cannot be `Acquire` or `AcqRel`");
                }
                let v = self.expr(v)?;
                let value = self.materialize(v, elem, span)?;
                self.b.push(Stmt::AtomicStore {
                    space,
                    scope,
                    order,
                    addr,
                    value,
                });
                Ok(Val::Unit)
            }
            ("compare_exchange" | "compare_exchange_weak", [current, new, success, failure]) => {
                let (s, f) = (ordering(success)?, ordering(failure)?);
                if matches!(f, MemOrder::Release | MemOrder::AcqRel) {
                    return err(
                        failure.span(),
                        "a compare-exchange's failure ordering cannot be `Release` or `AcqRel`",
                    );
                }
                let c = self.expr(current)?;
                let c = self.materialize(c, elem, current.span())?;
                let v = self.expr(new)?;
                let v = self.materialize(v, elem, new.span())?;
                let Val::Scalar(old) = self.atomic(
                    AtomicOp::CompareExchange,
                    space,
                    (scope, join(s, f)),
                    addr,
                    v,
                    Some(c),
                    elem,
                    span,
                )?
                else {
                    return err(span, "compare-exchange gave no value");
                };
                // Bit for bit, as `atom.cas` compares.
                let (old_bits, c_bits) = if elem.is_float() {
                    let int = if elem == S::F32 { S::U32 } else { S::U64 };
                    (
                        self.def(
                            Op::Bitcast {
                                value: old,
                                to: int,
                            },
                            span,
                        )?,
                        self.def(Op::Bitcast { value: c, to: int }, span)?,
                    )
                } else {
                    (old, c)
                };
                let ok = self.def(Op::Compare(cuprum_ir::CmpOp::Eq, old_bits, c_bits), span)?;
                Ok(Val::CasResult { ok, value: old })
            }
            (name, [v, o]) => {
                let op = match super::intrinsics::rust_atomic_op(name) {
                    Some(op) if op != AtomicOp::CompareExchange => op,
                    _ => return err(span, unknown(name)),
                };
                let order = ordering(o)?;
                let v = self.expr(v)?;
                let value = self.materialize(v, elem, span)?;
                if op == AtomicOp::Sub && elem.is_float() {
                    // `fetch_sub` of a float: the add of its negation, as cuda-oxide does.
                    let neg = self.def(Op::Unary(cuprum_ir::UnaryOp::Neg, value), span)?;
                    return self.atomic(
                        AtomicOp::Add,
                        space,
                        (scope, order),
                        addr,
                        neg,
                        None,
                        elem,
                        span,
                    );
                }
                self.atomic(op, space, (scope, order), addr, value, None, elem, span)
            }
            (name, _) => err(span, unknown(name)),
        }
    }

    /// Methods of a compare-exchange's `Result`: `is_ok`, `is_err`, `unwrap_or(x)` and
    /// `unwrap_or_else(|v| v)` (either way the value memory held).
    pub(super) fn cas_result_method(
        &mut self,
        m: &syn::ExprMethodCall,
        ok: Value,
        value: Value,
    ) -> Result<Val> {
        let span = m.span();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        match (m.method.to_string().as_str(), &args[..]) {
            ("is_ok", []) => Ok(Val::Scalar(ok)),
            ("is_err", []) => Ok(Val::Scalar(
                self.def(Op::Unary(cuprum_ir::UnaryOp::Not, ok), span)?,
            )),
            ("unwrap_or_else", [syn::Expr::Closure(c)])
                if c.inputs.len() == 1
                    && matches!((&c.inputs[0], &*c.body), (syn::Pat::Ident(p), syn::Expr::Path(b)) if b.path.is_ident(&p.ident)) =>
            {
                Ok(Val::Scalar(value))
            }
            ("unwrap_or", [d]) => {
                let ty = self.ty(value);
                let d = self.expr(d)?;
                let d = self.materialize(d, ty, span)?;
                Ok(Val::Scalar(self.def(
                    Op::Select {
                        cond: ok,
                        if_true: value,
                        if_false: d,
                    },
                    span,
                )?))
            }
            _ => err(
                span,
                "a compare-exchange's `Result` supports `is_ok()`, `is_err()`, `unwrap_or(x)`, \
                 `unwrap_or_else(|v| v)`, and `if let Ok(v)`/`Err(v)`",
            ),
        }
    }

    /// `Ok(v)`/`Err(v)` of a compare-exchange's `Result`: the condition, `v` bound to the
    /// value memory held.
    pub(super) fn match_cas_result(
        &mut self,
        ts: &syn::PatTupleStruct,
        ok: Value,
        value: Value,
        binds: &mut Vec<(String, Val)>,
    ) -> Result<Option<Value>> {
        let is_ok = ts.path.is_ident("Ok");
        if !(is_ok || ts.path.is_ident("Err")) || ts.elems.len() != 1 {
            return err(
                ts.span(),
                "match a compare-exchange's `Result` with `Ok(v)` or `Err(v)`",
            );
        }
        match &ts.elems[0] {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                binds.push((id.ident.to_string(), Val::Scalar(value)));
            }
            syn::Pat::Wild(_) => {}
            other => return err(other.span(), "bind the value to a name or `_`"),
        }
        Ok(Some(if is_ok {
            ok
        } else {
            self.def(Op::Unary(cuprum_ir::UnaryOp::Not, ok), ts.span())?
        }))
    }
}

fn unknown(name: &str) -> String {
    format!(
        "`{name}` is not an operation of an atomic cell (load, store, swap, compare_exchange, \
         fetch_add, fetch_sub, fetch_min, fetch_max, fetch_and, fetch_or, fetch_xor; each with \
         its ordering)"
    )
}

/// Makes every slice parameter that an atomic of `kernel` may write a read-write one, so that
/// nothing reads it as unchanging (`ld.nc`, the optimizer's read-only facts): the slice an
/// atomic's global address lies in, or every read-only slice where that is not known.
pub(super) fn mark_atomic_writes(kernel: &mut Kernel) {
    let mut written: Vec<u32> = Vec::new();
    let mut unknown = false;
    let addresses = Addresses::new(kernel);
    let mut visit = |stmt: &Stmt| {
        let addr = match stmt {
            Stmt::Def {
                op:
                    Op::Atomic {
                        space: AddressSpace::Global,
                        addr,
                        ..
                    },
                ..
            }
            | Stmt::AtomicStore {
                space: AddressSpace::Global,
                addr,
                ..
            } => *addr,
            _ => return,
        };
        match addresses.root(addr) {
            Some(Root::Slice(i)) => written.push(i),
            Some(_) => {}
            None => unknown = true,
        }
    };
    for_each_stmt(&kernel.body.stmts, &mut visit);
    for (i, p) in kernel.params.iter_mut().enumerate() {
        if let ParamKind::Slice { access, .. } = &mut p.kind
            && *access == SliceAccess::ReadOnly
            && (unknown || written.contains(&(i as u32)))
        {
            *access = SliceAccess::ReadWrite;
        }
    }
}

fn for_each_stmt(stmts: &[Stmt], f: &mut impl FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        for b in s.nested() {
            for_each_stmt(&b.stmts, f);
        }
    }
}
