//! Safe shared memory (`cuprum::simt::phased`): arrays whose type says whether the block is
//! writing them (each thread only the elements it owns), reading them (nobody writes) or
//! updating them with atomics only, with a block barrier between the phases.
//!
//! Here: the declarations (`SharedWrite::<T, N>::new()`, `SharedWrite2d::<T, R, C>::new()`),
//! the owned elements (`for (i, slot) in tile.mine()`, `if let Some(slot) =
//! tile.warp_slot()`), the reads of the read phase (`tile[i]`, `tile[r][c]`, `get`), the
//! atomics of the atomic phase (`fetch_add(i, v)`, ..), the split phase of tree reductions
//! (`sync_split(s)`: its boundary in a variable per array, checked `s <= N` and `s2 <= s`,
//! `mine_below()`, reads checked at or above `s`, the boundary checked block-uniform once the
//! kernel is lowered), the barriers (`tile.sync()`, `tile.sync_atomic()`, `(a, b).sync()`,
//! `sync_split(s)`), and the rule that makes the barriers pair up:
//! in a kernel with a phased array, every block barrier must be one that all threads of the
//! block reach together ([`cuprum_ir::uniformity`]), checked once the kernel is lowered.
//! rustc's type and move checks on the kernel's host copy keep the phases apart (a read-phase
//! array has no `mine()`, a write-phase one no indexing, and `sync()` consumes the old
//! phase); the ownership maps are documented, with the soundness argument, in
//! `cuprum::simt::phased`.

use cuprum_ir::{
    AddressSpace, BinaryOp, CmpOp, Constant, Dim, Op, ScalarType as S, Special, TrapKind, Value,
};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::strided::Extent;
use super::*;

/// How a phased array's elements are laid out and owned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PhasedShape {
    /// `SharedWrite<T, N>`: element `i` is linear thread `i % threads`'s.
    Linear(u32),
    /// `SharedWrite2d<T, R, C>` (rows, columns; row-major): `[r][c]` is thread
    /// `(c % dim_x, r % dim_y, 0)`'s.
    Rows(u32, u32),
}

impl PhasedShape {
    fn len(self) -> u32 {
        match self {
            PhasedShape::Linear(n) => n,
            PhasedShape::Rows(r, c) => r * c,
        }
    }
}

/// The phase a phased array's value names, which its type says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// `SharedWrite*`: owners write their elements.
    Write,
    /// `SharedRead*`: everyone reads, nobody writes.
    Read,
    /// `SharedAtomic`: every access is an atomic read-modify-write.
    Atomic,
    /// `SharedSplit`: owners write their elements below the boundary (a block-uniform value in
    /// the array's boundary variable), everyone reads elements at or above it.
    Split,
}

impl Phase {
    /// The phase after `sync()`.
    fn after_sync(self) -> Phase {
        match self {
            Phase::Write | Phase::Atomic | Phase::Split => Phase::Read,
            Phase::Read => Phase::Write,
        }
    }
}

/// A phased array: the IR shared array, its scalar elements, its shape, and which phase the
/// value names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Phased {
    pub array: u32,
    pub elem: S,
    pub shape: PhasedShape,
    pub phase: Phase,
}

impl Phased {
    pub(super) fn type_name(&self) -> String {
        let phase = match self.phase {
            Phase::Write => "Write",
            Phase::Read => "Read",
            Phase::Atomic => "Atomic",
            Phase::Split => "Split",
        };
        match self.shape {
            PhasedShape::Linear(n) => format!("Shared{phase}<{}, {n}>", self.elem),
            PhasedShape::Rows(r, c) => format!("Shared{phase}2d<{}, {r}, {c}>", self.elem),
        }
    }
}

/// Why a phased array's ownership needs a whole-block barrier discipline; the message of the
/// barrier check.
const DIVERGENT_BARRIER: &str = "this barrier may not be reached by every thread of the block \
     together, and this kernel uses phased shared memory (`SharedWrite`/`SharedRead`), whose \
     safety rests on all threads passing the same barriers in the same order. Keep `sync()` \
     and `sync_threads()` out of code that depends on the thread: conditions on thread \
     indices or loaded data, loops threads may leave on different iterations, and code after \
     a `return` only some threads take. Conditions on constants, scalar parameters, slice \
     lengths and block and grid indices are fine: for example write `if i < n { .. }` around \
     the loads and stores instead of `if i >= n { return; }`";

impl Lowerer<'_> {
    /// `SharedWrite::<T, N>::new()` or `SharedWrite2d::<T, R, C>::new()` (turbofish or the
    /// `let`'s annotation): declares the array, in its write phase.
    pub(super) fn phased_declaration(
        &mut self,
        pat: &syn::Pat,
        init: &syn::Expr,
    ) -> Result<Option<Val>> {
        let syn::Expr::Call(c) = init else {
            return Ok(None);
        };
        let syn::Expr::Path(p) = &*c.func else {
            return Ok(None);
        };
        let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
        let (ty, two_d) = match segs[..] {
            [.., ty, f] if f.ident == "new" && ty.ident == "SharedWrite" => (ty, false),
            [.., ty, f] if f.ident == "new" && ty.ident == "SharedWrite2d" => (ty, true),
            [.., ty, _] if ty.ident == "SharedRead" || ty.ident == "SharedRead2d" => {
                return err(
                    init.span(),
                    "a phased shared array starts in its write phase: declare it with \
                     `SharedWrite::<T, N>::new()` and `sync()` it to read it",
                );
            }
            _ => return Ok(None),
        };
        let annotation = match pat {
            syn::Pat::Type(pt) => match &*pt.ty {
                syn::Type::Path(tp) => tp.path.segments.last().map(|s| &s.arguments),
                _ => None,
            },
            _ => None,
        };
        let args = match (&ty.arguments, annotation) {
            (syn::PathArguments::None, Some(a)) => a,
            (t, _) => t,
        };
        let example = if two_d {
            "`SharedWrite2d::<f32, 32, 33>::new()` (element type, rows, columns)"
        } else {
            "`SharedWrite::<f32, 256>::new()` (element type, length)"
        };
        let (shared, shape) = if two_d {
            self.tile_shape(args, example, init.span())?
        } else {
            // A 1-D array takes its element type and length as `SharedArray<T, N>` does,
            // aggregates too.
            let shared = self.shared_shape(args, false, init.span())?;
            let len = shared.len.unwrap_or(0);
            (shared, PhasedShape::Linear(len))
        };
        let name = match strip_type(pat) {
            syn::Pat::Ident(id) => id.ident.to_string(),
            _ => {
                return err(
                    pat.span(),
                    "bind a shared array to a name: `let mut tile = SharedWrite::<f32, 256>::new();`",
                );
            }
        };
        let elem = shared.elem;
        let array = match self.declare_shared(&name, shared, init.span())? {
            Val::Shared {
                array: Some(array), ..
            } => array,
            Val::SharedElems { array, elem, .. } => {
                self.phased_aggregates.insert(array, elem);
                array
            }
            _ => {
                return err(
                    init.span(),
                    "internal compiler error: a static shared array expected",
                );
            }
        };
        self.uses_phased = true;
        Ok(Some(Val::Phased(Phased {
            array,
            elem,
            shape,
            phase: Phase::Write,
        })))
    }

    /// The element type, rows and columns of `SharedWrite2d<T, R, C>` (scalar elements).
    fn tile_shape(
        &self,
        args: &syn::PathArguments,
        example: &str,
        span: Span,
    ) -> Result<(intrinsics::SharedShape, PhasedShape)> {
        let syn::PathArguments::AngleBracketed(a) = args else {
            return err(span, format!("name the element type and size: {example}"));
        };
        let mut it = a.args.iter();
        let elem = match it.next() {
            Some(syn::GenericArgument::Type(t)) => self.resolve_scalar(t).map_err(|_| {
                syn::Error::new(
                    t.span(),
                    "2-D phased tiles hold scalars (integers, floats, `bool`): for vectors or \
                     structs, use a 1-D `SharedWrite<T, N>` and index it `r * C + c`",
                )
            })?,
            _ => {
                return err(
                    a.span(),
                    format!("expected the element type first: {example}"),
                );
            }
        };
        let expected = format!("expected a constant size: {example}");
        let rows = self.length_argument(it.next(), &expected, a.span())?;
        let cols = self.length_argument(it.next(), &expected, a.span())?;
        if it.next().is_some() {
            return err(a.span(), format!("too many generic arguments: {example}"));
        }
        let Some(len) = rows.checked_mul(cols) else {
            return err(span, "this shared tile is too large for a block");
        };
        let shared = intrinsics::SharedShape {
            elem,
            len: Some(len),
            agg: None,
            align: 0,
        };
        Ok((shared, PhasedShape::Rows(rows, cols)))
    }

    /// A block barrier at `span` (`sync_threads()`, a phased `sync()`), remembered for the
    /// barrier check.
    pub(super) fn barrier(&mut self, span: Span) {
        self.b.push(Stmt::Barrier);
        self.barrier_spans.push(span);
    }

    /// Methods of a phased array: `sync`, `get`, `len`/`is_empty`/`rows`/`cols`; `mine` and
    /// `warp_slot` have their own places (a `for` loop, an `if let`).
    pub(super) fn phased_method(&mut self, m: &syn::ExprMethodCall, p: Phased) -> Result<Val> {
        let span = m.span();
        let method = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        match (method.as_str(), &args[..], p.shape) {
            ("sync", [], _) => {
                self.barrier(span);
                Ok(Val::Phased(Phased {
                    phase: p.phase.after_sync(),
                    ..p
                }))
            }
            ("sync_atomic", [], _) if self.phased_aggregates.contains_key(&p.array) => err(
                span,
                "atomics work on scalar elements: a phased array of aggregates has no atomic \
                 phase",
            ),
            ("sync_atomic", [], PhasedShape::Linear(_)) if p.phase != Phase::Atomic => {
                self.barrier(span);
                Ok(Val::Phased(Phased {
                    phase: Phase::Atomic,
                    ..p
                }))
            }
            (
                "fetch_add" | "fetch_sub" | "fetch_min" | "fetch_max" | "fetch_and" | "fetch_or"
                | "fetch_xor" | "swap",
                [_, _],
                PhasedShape::Linear(n),
            ) if p.phase == Phase::Atomic => self.shared_method(m, Some(p.array), p.elem, n),
            ("sync_split", [bound], PhasedShape::Linear(n)) if p.phase != Phase::Atomic => {
                self.sync_split(p, n, bound, span)
            }
            ("sync_split", _, _) => err(
                span,
                "`sync_split(s)` takes the boundary `s` and works on 1-D arrays in their read, \
                 write or split phase: `let split = tile.sync_split(N / 2);`",
            ),
            ("above", [k], PhasedShape::Linear(n)) if p.phase == Phase::Split => {
                let site = source_text(m);
                let addr = self.split_above(p, n, k, site, span)?;
                self.phased_load(p, addr, span)
            }
            ("get", [i], PhasedShape::Linear(_)) if p.phase == Phase::Split => {
                let addr = self.phased_element(p, &[*i], &source_text(m), span)?;
                self.phased_load(p, addr, span)
            }
            ("boundary", [], _) if p.phase == Phase::Split => {
                let s = self.split_boundary(p, span)?;
                Ok(Val::Scalar(s))
            }
            ("mine_below", [], _) => err(
                span,
                "use `mine_below()` as `for (i, slot) in split.mine_below() { .. }`: the elements \
                 it hands out are reachable only inside the loop",
            ),
            ("len", [], _) => Ok(Val::Scalar(
                self.constant(Constant::u64(u64::from(p.shape.len()))),
            )),
            ("is_empty", [], _) => Ok(Val::Scalar(self.constant(Constant::bool(false)))),
            ("rows", [], PhasedShape::Rows(r, _)) => {
                Ok(Val::Scalar(self.constant(Constant::u64(u64::from(r)))))
            }
            ("cols", [], PhasedShape::Rows(_, c)) => {
                Ok(Val::Scalar(self.constant(Constant::u64(u64::from(c)))))
            }
            ("get", [i], PhasedShape::Linear(_)) if p.phase == Phase::Read => {
                let addr = self.phased_element(p, &[*i], &source_text(m), span)?;
                self.phased_load(p, addr, span)
            }
            ("get", [r, c], PhasedShape::Rows(..)) if p.phase == Phase::Read => {
                let addr = self.phased_element(p, &[*r, *c], &source_text(m), span)?;
                self.load_scalar(AddressSpace::Shared, addr, p.elem, span)
            }
            ("mine", [], _) => err(
                span,
                if matches!(p.shape, PhasedShape::Rows(..)) {
                    "use `mine()` as `for (r, c, slot) in tile.mine() { .. }`: the elements it \
                     hands out are reachable only inside the loop"
                } else {
                    "use `mine()` as `for (i, slot) in tile.mine() { .. }`: the elements it \
                     hands out are reachable only inside the loop"
                },
            ),
            ("warp_slot", [], _) => err(
                span,
                "use `warp_slot()` as `if let Some(slot) = tile.warp_slot() { .. }`",
            ),
            _ => err(
                span,
                format!(
                    "`{}` has no device method `{method}` with {} argument(s); it has {}",
                    p.type_name(),
                    args.len(),
                    match p.phase {
                        Phase::Write => {
                            "`mine()`, `warp_slot()` (1-D), `sync()`, `sync_atomic()` (1-D), \
                             `sync_split(s)` (1-D) and its sizes"
                        }
                        Phase::Read => {
                            "indexing, `get(..)`, `sync()`, `sync_atomic()` (1-D), \
                             `sync_split(s)` (1-D) and its sizes"
                        }
                        Phase::Split => {
                            "`mine_below()`, `above(k)`, indexing and `get(i)` at or above the \
                             boundary, `boundary()`, `sync_split(s2)`, `sync()` and its length"
                        }
                        Phase::Atomic => {
                            "`fetch_add`, `fetch_sub`, `fetch_min`, `fetch_max`, `fetch_and`, \
                             `fetch_or`, `fetch_xor`, `swap`, `sync()` and its length"
                        }
                    }
                ),
            ),
        }
    }

    /// `(a, b).sync()`: one barrier that moves every array of the tuple to its other phase.
    pub(super) fn sync_tuple(&mut self, items: &[Val], span: Span) -> Result<Val> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Val::Phased(p) => out.push(Val::Phased(Phased {
                    phase: p.phase.after_sync(),
                    ..*p
                })),
                other => {
                    return err(
                        span,
                        format!(
                            "`sync()` on a tuple needs phased shared arrays only, not {}",
                            describe(other)
                        ),
                    );
                }
            }
        }
        self.barrier(span);
        Ok(Val::Tuple(out))
    }

    /// The address of the element of a read-phase array that `indices` name (one index, or
    /// row and column), each bounds-checked.
    fn phased_element(
        &mut self,
        p: Phased,
        indices: &[&syn::Expr],
        site: &str,
        span: Span,
    ) -> Result<Value> {
        Self::require_read_phase(p, span)?;
        let linear = match (p.shape, indices) {
            (PhasedShape::Linear(n), [i]) => {
                let i = self.expr(i)?;
                let i = self.checked_array_index(i, n, site.to_string(), span, span)?;
                self.split_lower_bound(p, i, site, span)?;
                i
            }
            (PhasedShape::Rows(rows, cols), [r, c]) => {
                let r = self.expr(r)?;
                let r = self.checked_array_index(r, rows, site.to_string(), span, span)?;
                let c = self.expr(c)?;
                let c = self.checked_array_index(c, cols, site.to_string(), span, span)?;
                let width = self.constant(Constant::u64(u64::from(cols)));
                let row = self.def(Op::Binary(BinaryOp::Mul, r, width), span)?;
                self.def(Op::Binary(BinaryOp::Add, row, c), span)?
            }
            _ => {
                return err(
                    span,
                    match p.shape {
                        PhasedShape::Linear(_) => "index a 1-D shared array once: `tile[i]`",
                        PhasedShape::Rows(..) => "index a 2-D shared tile twice: `tile[r][c]`",
                    },
                );
            }
        };
        self.phased_addr(p, linear, span)
    }

    /// Refuses to read `p` unless it is in its read phase.
    fn require_read_phase(p: Phased, span: Span) -> Result<()> {
        match p.phase {
            Phase::Read | Phase::Split => Ok(()),
            Phase::Write => err(
                span,
                "a phased shared array in its write phase is reached only through `mine()` (a \
                 thread's own elements): `sync()` it to read any element",
            ),
            Phase::Atomic => err(
                span,
                "a phased shared array in its atomic phase is reached only through atomics \
                 (`fetch_add(i, v)`, ..): `sync()` it to read any element",
            ),
        }
    }

    /// `tile[j]` (and paths into it, `tile[j].pos.x`) of a read-phase array of aggregates.
    pub(super) fn phased_elements_index(
        &mut self,
        p: Phased,
        ty: crate::layout::ElemType,
        i: &syn::ExprIndex,
    ) -> Result<memory::MemRef> {
        let span = i.span();
        Self::require_read_phase(p, span)?;
        let index = self.expr(&i.index)?;
        let index =
            self.checked_array_index(index, p.shape.len(), source_text(i), i.index.span(), span)?;
        self.split_lower_bound(p, index, &source_text(i), span)?;
        let addr = self.phased_addr(p, index, span)?;
        Ok(memory::MemRef {
            space: AddressSpace::Shared,
            addr,
            ty,
            mutable: false,
        })
    }

    /// The shared address of element `linear` (a `U64` known to be in bounds).
    fn phased_addr(&mut self, p: Phased, linear: Value, span: Span) -> Result<Value> {
        let base = self.def(Op::SharedAddr(p.array), span)?;
        let index = self.cast_value(linear, S::U32, span)?;
        let bytes = match self.phased_aggregates.get(&p.array) {
            Some(ty) => ty.layout().size as u32,
            None => p.elem.size_bytes(),
        };
        let size = self.constant(Constant::u32(bytes));
        let offset = self.def(Op::Binary(BinaryOp::Mul, index, size), span)?;
        self.def(Op::Binary(BinaryOp::Add, base, offset), span)
    }

    fn load_scalar(&mut self, space: AddressSpace, addr: Value, ty: S, span: Span) -> Result<Val> {
        Ok(Val::Scalar(self.def(
            Op::Load {
                space,
                addr,
                ty,
                eviction: cuprum_ir::Eviction::Normal,
            },
            span,
        )?))
    }

    /// `tile[i]` or `tile[r][c]` of a read-phase array, when `i` is one: the element's
    /// place. `None` when the indexed expression is not a phased array.
    pub(super) fn phased_index(&mut self, i: &syn::ExprIndex) -> Result<Option<Place>> {
        let site = source_text(i);
        let (p, indices): (Phased, Vec<&syn::Expr>) = match self.phased_binding(&i.expr) {
            Some(p) => (p, vec![&*i.index]),
            None => match &*i.expr {
                syn::Expr::Index(inner) => match self.phased_binding(&inner.expr) {
                    Some(p) => (p, vec![&*inner.index, &*i.index]),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            },
        };
        let addr = self.phased_element(p, &indices, &site, i.span())?;
        Ok(Some(Place::Mem {
            space: AddressSpace::Shared,
            addr,
            elem: p.elem,
        }))
    }

    /// The phased array a plain name (or a parenthesized one) is bound to, without lowering
    /// anything.
    fn phased_binding(&self, e: &syn::Expr) -> Option<Phased> {
        match e {
            syn::Expr::Paren(p) => self.phased_binding(&p.expr),
            syn::Expr::Path(p) => match self.lookup(&p.path.get_ident()?.to_string()) {
                Some(Binding::Val(Val::Phased(p))) => Some(*p),
                _ => None,
            },
            _ => None,
        }
    }

    /// `name = other.sync()` where `name` holds a phased array, or `(a, b) = (ra, rb).sync()`:
    /// allowed when each value is the same array in the same phase as its name's (the array
    /// is the same memory; only its type changes). `None` when the target is not phased.
    pub(super) fn assign_phased(&mut self, a: &syn::ExprAssign) -> Result<Option<Val>> {
        let targets: Vec<Phased> = match &*a.left {
            syn::Expr::Tuple(t) if !t.elems.is_empty() => {
                match t.elems.iter().map(|e| self.phased_binding(e)).collect() {
                    Some(all) => all,
                    None => return Ok(None),
                }
            }
            left => match self.phased_binding(left) {
                Some(p) => vec![p],
                None => return Ok(None),
            },
        };
        let values = match (self.expr(&a.right)?, targets.len()) {
            (Val::Tuple(items), n) if n > 1 && items.len() == n => items,
            (v, 1) => vec![v],
            (other, _) => {
                return err(
                    a.right.span(),
                    format!(
                        "expected a tuple of {} phased shared arrays, found {}",
                        targets.len(),
                        describe(&other)
                    ),
                );
            }
        };
        for (target, value) in targets.iter().zip(values) {
            match value {
                Val::Phased(v) if v == *target => {}
                Val::Phased(v) => {
                    return err(
                        a.span(),
                        format!(
                            "a phased shared array's name holds that one array; this assigns \
                             it another one (`{}`): bind the other array to its own name",
                            v.type_name()
                        ),
                    );
                }
                other => {
                    return err(
                        a.right.span(),
                        format!(
                            "expected `{}`, found {}",
                            target.type_name(),
                            describe(&other)
                        ),
                    );
                }
            }
        }
        Ok(Some(Val::Unit))
    }

    /// `for (i, slot) in tile.mine() { .. }` (1-D) or `for (r, c, slot) in tile.mine()`
    /// (2-D): the body once per element the thread owns. `None` when the loop is not one.
    pub(super) fn phased_loop(&mut self, f: &syn::ExprForLoop) -> Result<Option<Val>> {
        let syn::Expr::MethodCall(m) = &*f.expr else {
            return Ok(None);
        };
        if m.method != "mine" && m.method != "mine_below" {
            return Ok(None);
        }
        let Some(p) = self.phased_binding(&m.receiver) else {
            return Ok(None);
        };
        let span = f.span();
        if !m.args.is_empty() {
            return err(m.span(), format!("`{}()` takes no arguments", m.method));
        }
        let below = m.method == "mine_below";
        match (p.phase, below) {
            (Phase::Split, true) | (Phase::Write, false) => {}
            (Phase::Split, false) => {
                return err(
                    m.span(),
                    "in the split phase a thread writes only its elements below the boundary: \
                     `for (i, slot) in split.mine_below() { .. }`",
                );
            }
            (_, true) => {
                return err(
                    m.span(),
                    "`mine_below()` is for the split phase (`sync_split(s)`); in the write phase \
                     a thread's elements are `mine()`",
                );
            }
            _ => {}
        }
        if below && self.mine_below_open.contains(&p.array) {
            return err(
                m.span(),
                "a `mine_below()` loop inside another over the same array would hand this \
                 thread two references to one element: use the outer loop's `slot`",
            );
        }
        if p.phase != Phase::Write && !below {
            return err(
                m.span(),
                "`mine()` is for the write phase; in the read phase every thread reads any \
                 element (`tile[i]`), in the atomic phase it updates any with atomics",
            );
        }
        if f.label.is_some() {
            return err(span, super::control::LABEL_HELP);
        }
        if super::control::breaks_this_loop(&f.body) {
            return err(
                span,
                "a `mine()` loop visits each of the thread's elements: `break` and `continue` \
                 are not allowed in it (use `if` around the body)",
            );
        }
        let arity = match p.shape {
            PhasedShape::Linear(_) => 2,
            PhasedShape::Rows(..) => 3,
        };
        let names = super::outputs::loop_names(
            &f.pat,
            arity,
            if below { "mine_below()" } else { "mine()" },
        )?;
        let block = self.contract.map(|c| c.block);
        match p.shape {
            PhasedShape::Linear(n) => {
                let (t, threads) = self.linear_thread(block, span)?;
                // In the split phase, only the elements below the boundary (`s <= N`, so a
                // `U32`).
                let boundary = match below {
                    true => {
                        let s = self.split_boundary(p, span)?;
                        Some(self.cast_value(s, S::U32, span)?)
                    }
                    false => None,
                };
                if below {
                    self.mine_below_open.push(p.array);
                }
                let result = self.strided_range(
                    t,
                    threads,
                    Extent::Fixed(u64::from(n)),
                    span,
                    &mut |this, i| {
                        let visit = |this: &mut Self| -> Result<()> {
                            let slot = this.phased_slot(p, i, span)?;
                            let i = this.cast_value(i, S::U64, span)?;
                            this.scoped_body(&names, vec![Val::Scalar(i), slot], &f.body)
                                .map(|_| ())
                        };
                        match boundary {
                            None => visit(this),
                            Some(s) => {
                                let inside = this.def(Op::Compare(CmpOp::Lt, i, s), span)?;
                                this.when(inside, visit)
                            }
                        }
                    },
                );
                if below {
                    self.mine_below_open.pop();
                }
                result?;
            }
            PhasedShape::Rows(rows, cols) => {
                let axis =
                    |this: &mut Self, d: Dim, fixed: Option<u32>| -> Result<(Value, Extent)> {
                        let t = this.def(Op::Special(Special::ThreadIdx(d)), span)?;
                        Ok((t, this.step(d, fixed, span)?))
                    };
                let (tx, sx) = axis(self, Dim::X, block.map(|b| b.0))?;
                let (ty, sy) = axis(self, Dim::Y, block.map(|b| b.1))?;
                let body = |this: &mut Self| -> Result<()> {
                    this.strided_range(
                        ty,
                        sy,
                        Extent::Fixed(u64::from(rows)),
                        span,
                        &mut |this, r| {
                            this.strided_range(
                                tx,
                                sx,
                                Extent::Fixed(u64::from(cols)),
                                span,
                                &mut |this, c| {
                                    let width = this.constant(Constant::u32(cols));
                                    let row =
                                        this.def(Op::Binary(BinaryOp::Mul, r, width), span)?;
                                    let linear =
                                        this.def(Op::Binary(BinaryOp::Add, row, c), span)?;
                                    let slot = this.phased_slot(p, linear, span)?;
                                    let r = this.cast_value(r, S::U64, span)?;
                                    let c = this.cast_value(c, S::U64, span)?;
                                    this.scoped_body(
                                        &names,
                                        vec![Val::Scalar(r), Val::Scalar(c), slot],
                                        &f.body,
                                    )
                                    .map(|_| ())
                                },
                            )
                        },
                    )
                };
                if block.is_some_and(|b| b.2 == 1) {
                    body(self)?;
                } else {
                    // Threads with z > 0 own nothing.
                    let tz = self.def(Op::Special(Special::ThreadIdx(Dim::Z)), span)?;
                    let zero = self.constant(Constant::u32(0));
                    let first = self.def(Op::Compare(CmpOp::Eq, tz, zero), span)?;
                    self.when(first, body)?;
                }
            }
        }
        Ok(Some(Val::Unit))
    }

    /// `if let Some(slot) = tile.warp_slot()`: whether this thread is lane 0 of a warp `w`
    /// below `N`, and element `w`'s reference. `None` when the expression is not one.
    /// Whether `m` is `warp_slot()` on a phased array (what [`Self::warp_slot`] lowers).
    pub(super) fn warp_slot_call(&self, m: &syn::ExprMethodCall) -> bool {
        m.method == "warp_slot" && self.phased_binding(&m.receiver).is_some()
    }

    pub(super) fn warp_slot(&mut self, m: &syn::ExprMethodCall) -> Result<Option<(Value, Val)>> {
        if m.method != "warp_slot" {
            return Ok(None);
        }
        let Some(p) = self.phased_binding(&m.receiver) else {
            return Ok(None);
        };
        let span = m.span();
        let PhasedShape::Linear(n) = p.shape else {
            return err(
                span,
                "`warp_slot()` is a method of 1-D `SharedWrite` arrays",
            );
        };
        if p.phase != Phase::Write {
            return err(span, "`warp_slot()` is for the write phase");
        }
        let block = self.contract.map(|c| c.block);
        let (t, _) = self.linear_thread(block, span)?;
        let five = self.constant(Constant::u32(5));
        let warp = self.def(Op::Binary(BinaryOp::Shr, t, five), span)?;
        let mask = self.constant(Constant::u32(31));
        let lane = self.def(Op::Binary(BinaryOp::And, t, mask), span)?;
        let zero = self.constant(Constant::u32(0));
        let first = self.def(Op::Compare(CmpOp::Eq, lane, zero), span)?;
        let n = self.constant(Constant::u32(n));
        let below = self.def(Op::Compare(CmpOp::Lt, warp, n), span)?;
        let cond = self.def(Op::Binary(BinaryOp::And, first, below), span)?;
        let slot = self.phased_slot(p, warp, span)?;
        Ok(Some((cond, slot)))
    }

    /// A mutable reference to element `linear` (a `U32` in bounds) of `p`.
    fn phased_slot(&mut self, p: Phased, linear: Value, span: Span) -> Result<Val> {
        let addr = self.phased_addr(p, linear, span)?;
        if let Some(ty) = self.phased_aggregates.get(&p.array) {
            return Ok(Val::AggRef(memory::MemRef {
                space: AddressSpace::Shared,
                addr,
                ty: ty.clone(),
                mutable: true,
            }));
        }
        Ok(Val::ElemRef {
            space: AddressSpace::Shared,
            addr,
            elem: p.elem,
            mutable: true,
        })
    }

    /// Loads the element at `addr` of `p` (a scalar, or an aggregate's value).
    fn phased_load(&mut self, p: Phased, addr: Value, span: Span) -> Result<Val> {
        match self.phased_aggregates.get(&p.array).cloned() {
            Some(ty) => {
                let place = memory::MemRef {
                    space: AddressSpace::Shared,
                    addr,
                    ty,
                    mutable: false,
                };
                self.load_mem(&place, span)
            }
            None => self.load_scalar(AddressSpace::Shared, addr, p.elem, span),
        }
    }

    /// The current split boundary of `p` (a `U64`): the constant the last `sync_split` set,
    /// when this point is in its block or in a conditional block nested in it (not in a loop
    /// entered since, whose later iterations may follow another `sync_split`); else read from
    /// its variable. Any `sync_split` in between would have replaced the constant.
    fn split_boundary(&mut self, p: Phased, span: Span) -> Result<Value> {
        if let Some((c, at, loops)) = self.split_constants.get(&p.array) {
            let here = self.b.position();
            if *loops == self.loop_depth && here.starts_with(at) {
                let c = *c;
                return Ok(self.constant(Constant::u64(c)));
            }
        }
        match self.split_boundaries.get(&p.array).copied() {
            Some(var) => self.def(Op::ReadVar(var), span),
            None => err(
                span,
                "internal compiler error: a split phase without a boundary",
            ),
        }
    }

    /// `tile.sync_split(s)` (from the read or write phase) or `split.sync_split(s2)` (the next
    /// level): checks the boundary (at most `N`; at most the current one), one barrier, and
    /// the array in its split phase with the new boundary.
    fn sync_split(&mut self, p: Phased, n: u32, bound: &syn::Expr, span: Span) -> Result<Val> {
        let s = self.expr(bound)?;
        let s = self.materialize(s, S::U64, bound.span()).map_err(|e| {
            syn::Error::new(e.span(), format!("{e} (a split boundary is a `usize`)"))
        })?;
        let site = source_text(bound);
        let (limit, what) = match p.phase {
            Phase::Split => (self.split_boundary(p, span)?, "the current boundary"),
            _ => (
                self.constant(Constant::u64(u64::from(n))),
                "the array's length",
            ),
        };
        match (self.constant_value(s), self.constant_value(limit)) {
            (Some(a), Some(b)) if a > b => {
                return err(
                    bound.span(),
                    format!(
                        "this split boundary ({a}) is above {what} ({b}): each level of a split \
                         phase keeps at most the elements of the one before"
                    ),
                );
            }
            (Some(a), Some(b)) if a <= b => {}
            _ => {
                let above = self.def(Op::Compare(CmpOp::Gt, s, limit), span)?;
                self.trap_if(
                    above,
                    TrapKind::Assert {
                        message: format!(
                            "split boundary `{site}` is above {what} (`sync_split` needs \
                             `s2 <= s <= N`)"
                        ),
                    },
                );
            }
        }
        self.split_boundary_values.push((s, bound.span()));
        self.barrier(span);
        let var = match self.split_boundaries.get(&p.array) {
            Some(var) => *var,
            None => {
                let var = self.b.var("split_boundary", S::U64);
                self.split_boundaries.insert(p.array, var);
                var
            }
        };
        self.b.push(Stmt::WriteVar { var, value: s });
        match self.constant_value(s) {
            Some(c) => {
                let at = self.b.position();
                self.split_constants
                    .insert(p.array, (c, at, self.loop_depth));
            }
            None => {
                self.split_constants.remove(&p.array);
            }
        }
        Ok(Val::Phased(Phased {
            phase: Phase::Split,
            ..p
        }))
    }

    /// In the split phase, traps unless element `index` (a `U64`) is at or above the
    /// boundary; a constant index below a constant boundary is refused.
    fn split_lower_bound(&mut self, p: Phased, index: Value, site: &str, span: Span) -> Result<()> {
        if p.phase != Phase::Split {
            return Ok(());
        }
        let s = self.split_boundary(p, span)?;
        match (self.constant_value(index), self.constant_value(s)) {
            (Some(i), Some(b)) if i < b => err(
                span,
                format!(
                    "element {i} is below the split boundary ({b}): in the split phase threads \
                     read only at or above the boundary (`split.above(k)` is element `s + k`), \
                     and write below it (`mine_below()`)"
                ),
            ),
            (Some(i), Some(b)) if i >= b => Ok(()),
            _ => {
                let ok = self.def(Op::Compare(CmpOp::Ge, index, s), span)?;
                self.trap_unless(
                    ok,
                    TrapKind::Assert {
                        message: format!(
                            "`{site}` reads below the split boundary (in the split phase threads \
                             read only at or above it)"
                        ),
                    },
                );
                Ok(())
            }
        }
    }

    /// The address of element `s + k` of a split-phase array of length `n`, checked to be
    /// below `n` (`k < n - s`, which cannot wrap: `s <= n`).
    fn split_above(
        &mut self,
        p: Phased,
        n: u32,
        k: &syn::Expr,
        site: String,
        span: Span,
    ) -> Result<Value> {
        let kv = self.expr(k)?;
        let kv = self
            .materialize(kv, S::U64, k.span())
            .map_err(|e| syn::Error::new(e.span(), format!("{e} (`above` takes a `usize`)")))?;
        let s = self.split_boundary(p, span)?;
        let len = self.constant(Constant::u64(u64::from(n)));
        let room = self.def(Op::Binary(BinaryOp::Sub, len, s), span)?;
        let ok = self.def(Op::Compare(CmpOp::Lt, kv, room), span)?;
        self.trap_unless(
            ok,
            TrapKind::BoundsCheck {
                index: kv,
                len: room,
                site,
            },
        );
        let i = self.def(Op::Binary(BinaryOp::Add, s, kv), span)?;
        self.phased_addr(p, i, span)
    }

    /// The thread's linear index in its block and the block's thread count (`U32`s), the
    /// count a constant under a launch contract.
    fn linear_thread(
        &mut self,
        block: Option<(u32, u32, u32)>,
        span: Span,
    ) -> Result<(Value, Extent)> {
        let t = self.linear_thread_index(span)?;
        let step = match block {
            Some((x, y, z)) => Extent::Fixed(u64::from(x * y * z)),
            None => {
                let nx = self.block_dim(Dim::X, span)?;
                let ny = self.block_dim(Dim::Y, span)?;
                let nz = self.block_dim(Dim::Z, span)?;
                let xy = self.def(Op::Binary(BinaryOp::Mul, nx, ny), span)?;
                Extent::Runtime(self.def(Op::Binary(BinaryOp::Mul, xy, nz), span)?)
            }
        };
        Ok((t, step))
    }

    fn step(&mut self, d: Dim, fixed: Option<u32>, span: Span) -> Result<Extent> {
        Ok(match fixed {
            Some(n) => Extent::Fixed(u64::from(n)),
            None => Extent::Runtime(self.def(Op::Special(Special::BlockDim(d)), span)?),
        })
    }
}

/// In a kernel with phased shared memory, refuses every barrier that not all threads of a
/// block may reach together. `barrier_spans` are the barriers' sources in program order
/// ([`Lowerer::barrier`]); `fallback` is where to report one without a recorded source.
pub(super) fn check_barriers(
    kernel: &cuprum_ir::Kernel,
    barrier_spans: &[Span],
    fallback: Span,
) -> Result<()> {
    let divergent = cuprum_ir::uniformity::divergent_barriers(kernel);
    let Some(&first) = divergent.first() else {
        return Ok(());
    };
    let span = barrier_spans.get(first).copied().unwrap_or(fallback);
    err(span, DIVERGENT_BARRIER)
}

/// Refuses a split boundary (`sync_split(s)`) that may differ between threads of a block:
/// each thread's reads at or above `s` are disjoint from the others' writes below it only
/// when every thread has the same `s`.
pub(super) fn check_split_boundaries(
    kernel: &cuprum_ir::Kernel,
    boundaries: &[(Value, Span)],
) -> Result<()> {
    let values: Vec<Value> = boundaries.iter().map(|(v, _)| *v).collect();
    let varying = cuprum_ir::uniformity::varying_values(kernel, &values);
    let Some(&(_, span)) = varying.first().and_then(|&k| boundaries.get(k)) else {
        return Ok(());
    };
    err(
        span,
        "this split boundary may differ between threads of the block: in the split phase a \
         thread's reads at or above the boundary miss the other threads' writes below it only \
         when every thread has the same boundary. Compute it from constants, scalar \
         parameters, slice lengths and block and grid sizes (`let mut s = BLOCK / 2; .. s >>= \
         1; split = split.sync_split(s as usize);`), not from thread indices or loaded data",
    )
}
