//! One analysis of a kernel's addresses ([`Addresses`]), computed once per kernel and asked by
//! every layer that reasons about where a memory access goes.
//!
//! The optimizer proves bounds checks unnecessary and loads unable to fault (`checks`,
//! `vectorize`), merges consecutive aligned accesses into vector ones (`vectorize`) and keeps
//! local arrays in registers when every access has a known position (`promote`); the PTX
//! writer sends loads of read-only slices through the non-coherent cache (`ld.global.nc`).
//! Each needs the same facts about an address, so they are computed here, once, for every
//! value of the kernel (the PTX writer may depend on nothing but this crate, so this is where
//! they live):
//!
//! * its **linear form** ([`Linear`]), for values of the address and index types `U64`
//!   (global addresses, slice indices) and `U32` (shared and local addresses, narrowed
//!   indices): `c + sum(k_i * x_i)` in the type's wrapping arithmetic, read through `+`, `-`,
//!   `*` by a constant and `<<` by a constant. The terms `x_i` are values the form does not
//!   look into (loads, variable reads, casts, parameters, ...); copies of one slice base,
//!   slice length or array address count as one term ([`Addresses::canonical`]: the front end
//!   makes copies before `cse` merges them). A value of another type is its own one term;
//! * its **root** ([`Root`]): the one term of the form that is the address of a slice, a shared
//!   or local array or dynamic shared memory, with coefficient 1; the rest of the form is the
//!   offset from it ([`Addresses::root_offset`]);
//! * its **alignment** ([`Addresses::align_bits`]): trailing zero bits it provably has. A slice's
//!   base address is 16-byte aligned by IR rule ([`crate::ParamKind::Slice`]: a slice starts
//!   where a device allocation starts, and both backends refuse a launch where it does not); a
//!   shared or local array's address has the alignment of its offset in the layout, up to
//!   [`crate::ARRAY_ALIGN`] (the local window's alignment; the shared window's is
//!   [`crate::Kernel::shared_window_align`]), and dynamic shared memory the kernel's
//!   [`crate::Kernel::dyn_shared_alignment`];
//! * whether it is an address **inside a read-only slice** ([`Addresses::is_read_only`]): a
//!   provenance question, answered with a fixpoint that follows values through variables (a
//!   pointer kept in a loop variable stays rooted).
//!
//! Linear forms and roots read only SSA definitions; read-only-ness is stricter about the
//! integer parts of an address (they must derive from no address and no loaded value) and
//! follows variables. The two agree on the common address `base(s) + i * size`; each layer asks
//! the one its reasoning needs.
//!
//! The analysis is plain data about one version of a kernel: a pass that changes the kernel
//! must compute it again (the optimizer's context does that, and checks a kept copy against a
//! fresh one in debug builds, hence `PartialEq`). Values created after it was computed read as
//! their own one term, with no alignment, root or read-only-ness known.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::{BinaryOp, Block, Kernel, Op, ParamKind, ScalarType, SliceAccess, Stmt, Value};

/// Trailing zero bits a slice's base address has: 16-byte alignment, which the IR guarantees
/// ([`crate::ParamKind::Slice`]).
pub const SLICE_BASE_ALIGN_BITS: u32 = 4;

/// The most terms a linear form keeps: a value whose form would have more is its own one
/// term. (Addresses have a handful; this bounds the work on long sums of unrelated values.)
const MAX_TERMS: usize = 16;

/// `c + sum(k_i * x_i)` modulo `2^w`, `w` the bit width of the value's type: the terms (by
/// [`Value`], each with a nonzero coefficient) and the constant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Linear {
    /// Sorted by value, without repeats or zero coefficients.
    terms: Vec<(Value, u64)>,
    constant: u64,
    /// `2^w - 1`: every coefficient and the constant are reduced by it.
    mask: u64,
}

impl Linear {
    /// The constant `c` in a type whose values are masked by `mask`.
    fn constant_of(c: u64, mask: u64) -> Self {
        Self {
            terms: Vec::new(),
            constant: c & mask,
            mask,
        }
    }

    /// `1 * x`.
    fn term(x: Value, mask: u64) -> Self {
        Self {
            terms: vec![(x, 1)],
            constant: 0,
            mask,
        }
    }

    /// The terms and their coefficients, in value order.
    pub fn terms(&self) -> &[(Value, u64)] {
        &self.terms
    }

    /// The constant part.
    pub fn constant(&self) -> u64 {
        self.constant
    }

    /// The constant, if the form has no terms.
    pub fn as_constant(&self) -> Option<u64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// The term and its coefficient, if the form has exactly one.
    pub fn single_term(&self) -> Option<(Value, u64)> {
        match self.terms[..] {
            [t] => Some(t),
            _ => None,
        }
    }

    /// The form times `k` (wrapping in the form's type).
    pub fn scaled(&self, k: u64) -> Self {
        Self::scale(&self.terms, self.constant, k, self.mask)
    }

    /// The form without the term `x`.
    pub fn without(&self, x: Value) -> Self {
        let mut out = self.clone();
        out.terms.retain(|&(y, _)| y != x);
        out
    }

    /// `k * (terms + constant)` modulo `mask + 1`.
    fn scale(terms: &[(Value, u64)], constant: u64, k: u64, mask: u64) -> Self {
        Self {
            terms: terms
                .iter()
                .map(|&(x, c)| (x, c.wrapping_mul(k) & mask))
                .filter(|&(_, c)| c != 0)
                .collect(),
            constant: constant.wrapping_mul(k) & mask,
            mask,
        }
    }

    /// `a + sign * b` modulo `mask + 1`, each side given as its terms and constant (`sign` 1,
    /// or `-1` as all ones).
    fn sum(a: Parts<'_>, b: Parts<'_>, sign: u64, mask: u64) -> Self {
        let ((a, ac), (b, bc)) = (a, b);
        let mut terms = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let (x, c) = match (a.get(i), b.get(j)) {
                (Some(&(x, c)), Some(&(y, _))) if x < y => {
                    i += 1;
                    (x, c)
                }
                (Some(&(x, c)), Some(&(y, d))) if x == y => {
                    i += 1;
                    j += 1;
                    (x, c.wrapping_add(d.wrapping_mul(sign)))
                }
                (_, Some(&(y, d))) => {
                    j += 1;
                    (y, d.wrapping_mul(sign))
                }
                (Some(&(x, c)), None) => {
                    i += 1;
                    (x, c)
                }
                (None, None) => break,
            };
            if c & mask != 0 {
                terms.push((x, c & mask));
            }
        }
        Self {
            terms,
            constant: ac.wrapping_add(bc.wrapping_mul(sign)) & mask,
            mask,
        }
    }
}

/// A linear form's terms and constant, borrowed.
type Parts<'a> = (&'a [(Value, u64)], u64);

/// What an address is based on: the term of its linear form that is a memory object's
/// address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Root {
    /// The base address of slice parameter `index` ([`Op::SliceBase`]).
    Slice(u32),
    /// The address of static shared array `index` ([`Op::SharedAddr`]).
    Shared(u32),
    /// The start of dynamic shared memory ([`Op::DynSharedAddr`]).
    DynShared,
    /// The address of local array `index` ([`Op::LocalAddr`]).
    Local(u32),
}

/// Operations whose copies are one term of a linear form (see [`Addresses::canonical`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Named {
    Root(Root),
    SliceLen(u32),
}

impl Named {
    fn of(op: &Op) -> Option<Self> {
        Some(match *op {
            Op::SliceBase(p) => Self::Root(Root::Slice(p)),
            Op::SliceLen(p) => Self::SliceLen(p),
            Op::SharedAddr(i) => Self::Root(Root::Shared(i)),
            Op::DynSharedAddr => Self::Root(Root::DynShared),
            Op::LocalAddr(i) => Self::Root(Root::Local(i)),
            _ => return None,
        })
    }
}

/// The address facts of every value of one kernel (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Addresses {
    /// Each value's type mask (`2^w - 1` for an integer of `w` bits; 0 for other types).
    masks: Vec<u64>,
    /// Each value's linear form; `None` where it is its own one term (and for types other than
    /// `U32` and `U64`).
    forms: Vec<Option<Linear>>,
    /// Each value's provable trailing zero bits.
    align: Vec<u8>,
    /// The first value (by index) of each slice base, slice length and array address, for
    /// every other value of the same operation.
    canonical: HashMap<Value, Value>,
    /// The root of each (canonical) value defined as a memory object's address.
    roots: HashMap<Value, Root>,
    /// The byte offset of each local array ([`crate::array_layout`]).
    local_offsets: Vec<u32>,
    /// Each static shared array's offset in the shared window ([`crate::array_layout`]).
    shared_offsets: Vec<u32>,
    /// The alignment of dynamic shared memory, in trailing zero bits.
    dyn_shared_align_bits: u32,
    /// The alignment of the static shared window ([`crate::Kernel::shared_window_align`]),
    /// in trailing zero bits.
    shared_window_bits: u32,
    /// Whether each value is an address inside a read-only slice.
    read_only: Vec<bool>,
}

impl Addresses {
    /// Computes the analysis of `kernel` (which should be valid: every value defined before
    /// its uses).
    pub fn new(kernel: &Kernel) -> Self {
        let n = kernel.values.len();
        let masks: Vec<u64> = kernel.values.iter().map(|(_, d)| mask_of(d.ty)).collect();
        let mut defs: Vec<(Value, &Op)> = Vec::new();
        // Every definition (the operations read below are all pure).
        kernel.body.visit(&mut |s| {
            if let Stmt::Def { value, op } = s {
                defs.push((*value, op));
            }
        });
        let mut first: HashMap<Named, Value> = HashMap::new();
        for &(v, op) in &defs {
            if let Some(key) = Named::of(op) {
                first
                    .entry(key)
                    .and_modify(|f| *f = (*f).min(v))
                    .or_insert(v);
            }
        }
        let mut canonical = HashMap::new();
        let mut roots = HashMap::new();
        for &(v, op) in &defs {
            if let Some(key) = Named::of(op)
                && let Some(&f) = first.get(&key)
            {
                if f != v {
                    canonical.insert(v, f);
                }
                if let Named::Root(r) = key {
                    roots.insert(f, r);
                }
            }
        }
        let mut a = Self {
            masks,
            forms: vec![None; n],
            align: vec![0; n],
            canonical,
            roots,
            local_offsets: crate::array_layout(&kernel.locals).0,
            shared_offsets: kernel.shared_layout().0,
            dyn_shared_align_bits: kernel.dyn_shared_alignment().trailing_zeros(),
            shared_window_bits: kernel.shared_window_align().trailing_zeros(),
            read_only: read_only_addresses(kernel),
        };
        for &(v, op) in &defs {
            let form = a.form_of(v, op);
            let align = a.align_of(v, op, form.as_ref());
            if let Some(slot) = a.forms.get_mut(v.index()) {
                *slot = form;
            }
            if let Some(slot) = a.align.get_mut(v.index()) {
                *slot = align;
            }
        }
        a
    }

    /// `v`'s type mask, 0 for values that are not integers (or unknown).
    fn mask(&self, v: Value) -> u64 {
        self.masks.get(v.index()).copied().unwrap_or(0)
    }

    /// The linear form of `v` (its own one term where nothing more is known, as for values
    /// of types other than `U32` and `U64`).
    pub fn linear(&self, v: Value) -> Linear {
        self.form(v).into_owned()
    }

    /// [`linear`](Self::linear), borrowed where it is stored.
    fn form(&self, v: Value) -> Cow<'_, Linear> {
        match self.forms.get(v.index()) {
            Some(Some(form)) => Cow::Borrowed(form),
            _ => Cow::Owned(Linear::term(self.canonical(v), self.mask(v))),
        }
    }

    /// Calls `f` with the terms and constant of `v`'s linear form (without building a form
    /// for a value that is its own term).
    fn with_parts<R>(&self, v: Value, f: impl FnOnce(Parts<'_>) -> R) -> R {
        match self.forms.get(v.index()) {
            Some(Some(form)) => f((&form.terms, form.constant)),
            _ => f((&[(self.canonical(v), 1)], 0)),
        }
    }

    /// The value standing for every copy of `v`'s operation when `v` is a slice base, a
    /// slice length or an array address (the copy with the lowest index); `v` otherwise.
    pub fn canonical(&self, v: Value) -> Value {
        self.canonical.get(&v).copied().unwrap_or(v)
    }

    /// What `v` is based on, and its offset from there: the one term of its linear form that is
    /// a memory object's address, when that term has coefficient 1 and no other term is an
    /// address; the offset is the rest of the form.
    pub fn root_offset(&self, v: Value) -> Option<(Root, Linear)> {
        let form = self.form(v);
        let mut found = None;
        for &(x, k) in form.terms() {
            if let Some(&r) = self.roots.get(&x) {
                if found.is_some() {
                    return None;
                }
                found = Some((r, x, k));
            }
        }
        let (root, x, k) = found?;
        (k == 1).then(|| (root, form.without(x)))
    }

    /// What `v` is based on ([`root_offset`](Self::root_offset) without the offset).
    pub fn root(&self, v: Value) -> Option<Root> {
        self.root_offset(v).map(|(r, _)| r)
    }

    /// The value of `v`, a `U32` or `U64`, if its linear form is a constant.
    fn constant(&self, v: Value) -> Option<u64> {
        self.forms.get(v.index())?.as_ref()?.as_constant()
    }

    /// The trailing zero bits `v` provably has (at most its width; 0 for values that are not
    /// integers).
    pub fn align_bits(&self, v: Value) -> u32 {
        u32::from(self.align.get(v.index()).copied().unwrap_or(0))
    }

    /// The value of `v`, a local address (`U32`), where the local arrays' layout decides it:
    /// its linear form's terms are all local array addresses.
    pub fn local_offset(&self, v: Value) -> Option<u32> {
        let form = self.form(v);
        let mut total = form.constant();
        for &(x, k) in form.terms() {
            let Some(&Root::Local(i)) = self.roots.get(&x) else {
                return None;
            };
            let offset = u64::from(*self.local_offsets.get(i as usize)?);
            total = total.wrapping_add(k.wrapping_mul(offset));
        }
        u32::try_from(total & form.mask).ok()
    }

    /// Whether `v` is a global address inside a slice parameter the kernel only reads
    /// ([`SliceAccess::ReadOnly`]): `SliceBase(i)` plus or minus integers that derive from no
    /// address and no loaded value, followed through variables.
    pub fn is_read_only(&self, v: Value) -> bool {
        self.read_only.get(v.index()).copied().unwrap_or(false)
    }

    /// The linear form of a definition `v = op`, from those of its operands; `None` where `v`
    /// is its own one term.
    fn form_of(&self, v: Value, op: &Op) -> Option<Linear> {
        let mask = self.mask(v);
        if mask != u64::MAX && mask != u64::from(u32::MAX) {
            return None;
        }
        let k = |x: Value| self.constant(x);
        let sum = |x: Value, y: Value, sign: u64| {
            self.with_parts(x, |a| self.with_parts(y, |b| Linear::sum(a, b, sign, mask)))
        };
        let scaled = |x: Value, k: u64| self.with_parts(x, |(t, c)| Linear::scale(t, c, k, mask));
        let form = match *op {
            Op::Const(c) => Linear::constant_of(c.bits, mask),
            Op::Binary(BinaryOp::Add, x, y) => sum(x, y, 1),
            Op::Binary(BinaryOp::Sub, x, y) => sum(x, y, u64::MAX),
            Op::Binary(BinaryOp::Mul, x, y) => match (k(x), k(y)) {
                (_, Some(c)) => scaled(x, c),
                (Some(c), _) => scaled(y, c),
                _ => return None,
            },
            Op::Binary(BinaryOp::Shl, x, s) => scaled(x, 1u64 << (k(s)? % u64::from(width(mask)))),
            _ => return None,
        };
        (form.terms.len() <= MAX_TERMS).then_some(form)
    }

    /// The trailing zero bits of a definition `v = op` (`form` being its linear form).
    fn align_of(&self, v: Value, op: &Op, form: Option<&Linear>) -> u8 {
        let mask = self.mask(v);
        if mask == 0 {
            return 0;
        }
        let bits = width(mask);
        let konst = match *op {
            Op::Const(c) => Some(c.bits),
            _ => form.and_then(Linear::as_constant),
        };
        if let Some(c) = konst {
            return c.trailing_zeros().min(bits) as u8;
        }
        let a = |x: Value| self.align_bits(x);
        // An array's address: its window starts `ARRAY_ALIGN`-aligned, and its offset in
        // the window has the trailing zeros it has.
        let array = |offsets: &[u32], i: u32, window: u32| {
            offsets
                .get(i as usize)
                .map_or(0, |&o| o.trailing_zeros().min(window))
        };
        let r = match *op {
            Op::SliceBase(_) => SLICE_BASE_ALIGN_BITS,
            Op::SharedAddr(i) => array(&self.shared_offsets, i, self.shared_window_bits),
            Op::LocalAddr(i) => array(&self.local_offsets, i, crate::ARRAY_ALIGN.trailing_zeros()),
            Op::DynSharedAddr => self.dyn_shared_align_bits,
            Op::Binary(BinaryOp::Mul, x, y) => a(x) + a(y),
            Op::Binary(BinaryOp::Shl, x, s) => match self.constant(s) {
                Some(s) => a(x) + (s % u64::from(bits)) as u32,
                None => a(x),
            },
            Op::Binary(BinaryOp::Add | BinaryOp::Sub, x, y) => a(x).min(a(y)),
            Op::Binary(BinaryOp::And, x, y) => a(x).max(a(y)),
            Op::Select {
                if_true, if_false, ..
            } => a(if_true).min(a(if_false)),
            // Integer casts keep the low bits.
            Op::Cast { value, .. } if self.mask(value) != 0 => a(value),
            _ => 0,
        };
        r.min(bits) as u8
    }
}

/// `2^w - 1` for an integer type of `w` bits; 0 for other types.
fn mask_of(ty: ScalarType) -> u64 {
    match ty.bits() {
        _ if !ty.is_int() => 0,
        w if w >= 64 => u64::MAX,
        w => (1u64 << w) - 1,
    }
}

/// The bit width a type mask stands for.
fn width(mask: u64) -> u32 {
    mask.count_ones()
}

/// What a value is, as far as slice provenance goes. A small lattice: `Unset` below
/// everything, `Unknown` above everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Not computed yet (a variable not written so far in the fixpoint).
    Unset,
    /// An integer derived from no slice base.
    Int,
    /// `SliceBase(i)` plus or minus integers.
    Base(u32),
    Unknown,
}

impl Origin {
    fn join(self, other: Origin) -> Origin {
        match (self, other) {
            (Origin::Unset, x) | (x, Origin::Unset) => x,
            (a, b) if a == b => a,
            _ => Origin::Unknown,
        }
    }
}

/// For every value of `kernel`: whether it is an address inside a read-only slice parameter.
/// An address is rooted in slice `i` when it is `SliceBase(i)` plus or minus integers that are
/// provably not addresses themselves; values flowing through variables are followed with a
/// fixpoint over the whole body, so loop counters kept in variables do not defeat it.
/// Anything unclear is not read-only (which is always safe to answer).
fn read_only_addresses(kernel: &Kernel) -> Vec<bool> {
    let read_only = |i: u32| {
        matches!(
            kernel.params.get(i as usize).map(|p| p.kind),
            Some(ParamKind::Slice {
                access: SliceAccess::ReadOnly,
                ..
            })
        )
    };
    if !(0..kernel.params.len() as u32).any(read_only) {
        return vec![false; kernel.values.len()];
    }
    let mut t = Tracer {
        values: vec![Origin::Unset; kernel.values.len()],
        vars: vec![Origin::Unset; kernel.vars.len()],
        changed: true,
    };
    // Variables only move up the lattice, so this ends after at most 2 * vars + 1 rounds.
    let mut rounds = 0;
    while t.changed && rounds <= 2 * kernel.vars.len() + 1 {
        t.changed = false;
        t.block(&kernel.body);
        rounds += 1;
    }
    if t.changed {
        return vec![false; kernel.values.len()];
    }
    t.values
        .iter()
        .map(|o| matches!(*o, Origin::Base(i) if read_only(i)))
        .collect()
}

/// The fixpoint of [`read_only_addresses`]: the origin of every value and variable.
struct Tracer {
    values: Vec<Origin>,
    vars: Vec<Origin>,
    changed: bool,
}

impl Tracer {
    fn get(&self, v: Value) -> Origin {
        self.values
            .get(v.index())
            .copied()
            .unwrap_or(Origin::Unknown)
    }

    fn block(&mut self, block: &Block) {
        for stmt in &block.stmts {
            match stmt {
                Stmt::Def { value, op } => {
                    let o = self.op(op);
                    if let Some(slot) = self.values.get_mut(value.index()) {
                        *slot = o;
                    }
                }
                Stmt::WriteVar { var, value } => {
                    let o = self.get(*value);
                    if let Some(slot) = self.vars.get_mut(var.index()) {
                        let joined = slot.join(o);
                        if joined != *slot {
                            *slot = joined;
                            self.changed = true;
                        }
                    }
                }
                // Results of other statements (matrix fragments, vector loads) are data, never
                // trusted as addresses into a slice.
                other => {
                    for v in other.results() {
                        if let Some(slot) = self.values.get_mut(v.index()) {
                            *slot = Origin::Unknown;
                        }
                    }
                    // Variables a statement writes in place (wgmma accumulators) are data too.
                    for var in other.vars_in_place() {
                        if let Some(slot) = self.vars.get_mut(var.index())
                            && *slot != Origin::Unknown
                        {
                            *slot = Origin::Unknown;
                            self.changed = true;
                        }
                    }
                    for b in other.nested() {
                        self.block(b);
                    }
                }
            }
        }
    }

    fn op(&self, op: &Op) -> Origin {
        use Origin::*;
        let int_only = |os: &[Origin]| {
            if os.contains(&Unset) {
                Unset
            } else if os.iter().all(|o| *o == Int) {
                Int
            } else {
                Unknown
            }
        };
        match op {
            Op::Const(_) | Op::Param(_) | Op::SliceLen(_) | Op::Special(_) => Int,
            Op::SliceBase(i) => Base(*i),
            Op::Binary(b, l, r) => {
                let (l, r) = (self.get(*l), self.get(*r));
                match (b, l, r) {
                    (_, Unset, _) | (_, _, Unset) => Unset,
                    (BinaryOp::Add, Base(i), Int) | (BinaryOp::Add, Int, Base(i)) => Base(i),
                    (BinaryOp::Sub, Base(i), Int) => Base(i),
                    (BinaryOp::Sub, Base(i), Base(j)) if i == j => Int,
                    _ => int_only(&[l, r]),
                }
            }
            Op::Unary(_, v) | Op::Cast { value: v, .. } | Op::Bitcast { value: v, .. } => {
                int_only(&[self.get(*v)])
            }
            Op::Select {
                if_true, if_false, ..
            } => {
                let (t, f) = (self.get(*if_true), self.get(*if_false));
                if t == f { t } else { t.join(f) }
            }
            Op::ReadVar(var) => self.vars.get(var.index()).copied().unwrap_or(Unknown),
            Op::Compare(..) | Op::Vote { .. } => Int,
            Op::SharedAddr(_) | Op::DynSharedAddr | Op::LocalAddr(_) => Int,
            Op::Ternary(_, a, b, c) => int_only(&[self.get(*a), self.get(*b), self.get(*c)]),
            Op::Load { .. } | Op::Atomic { .. } | Op::AtomicLoad { .. } | Op::Shuffle { .. } => {
                Unknown
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        AddressSpace, ArrayDecl, CmpOp, Constant, KernelBuilder, ScalarType as S, SliceAccess,
    };

    fn slice(b: &mut KernelBuilder, name: &str, access: SliceAccess) -> u32 {
        b.param(
            name,
            ParamKind::Slice {
                elem: S::F32,
                access,
            },
        )
    }

    fn def(b: &mut KernelBuilder, op: Op) -> Value {
        b.def(op).expect("a well-typed operation")
    }

    fn bin(b: &mut KernelBuilder, op: BinaryOp, x: Value, y: Value) -> Value {
        def(b, Op::Binary(op, x, y))
    }

    fn form(terms: &[(Value, u64)], constant: u64) -> (Vec<(Value, u64)>, u64) {
        (terms.to_vec(), constant)
    }

    fn parts(l: &Linear) -> (Vec<(Value, u64)>, u64) {
        (l.terms().to_vec(), l.constant())
    }

    #[test]
    fn linear_forms_read_through_sums_products_and_shifts() {
        let mut b = KernelBuilder::new("k");
        let a = slice(&mut b, "a", SliceAccess::ReadOnly);
        let p = b.param("i", ParamKind::Scalar(S::U64));
        let base = def(&mut b, Op::SliceBase(a));
        let copy = def(&mut b, Op::SliceBase(a));
        let i = def(&mut b, Op::Param(p));
        let (four, three, one) = (
            b.constant(Constant::u64(4)),
            b.constant(Constant::u64(3)),
            b.constant(Constant::u64(1)),
        );
        let two = b.constant(Constant::u32(2));
        let j = bin(&mut b, BinaryOp::Mul, i, four);
        let j3 = bin(&mut b, BinaryOp::Add, j, three);
        let off = bin(&mut b, BinaryOp::Sub, j3, one);
        let shifted = bin(&mut b, BinaryOp::Shl, i, two);
        // A copy of the slice base: the same term as the first one.
        let addr = bin(&mut b, BinaryOp::Add, copy, off);
        let k = b.finish();
        let an = Addresses::new(&k);
        assert_eq!(parts(&an.linear(off)), form(&[(i, 4)], 2));
        assert_eq!(an.linear(shifted), an.linear(j));
        assert_eq!(an.canonical(copy), base);
        assert_eq!(parts(&an.linear(addr)), form(&[(base, 1), (i, 4)], 2));
        let (root, rest) = an.root_offset(addr).expect("based on slice a");
        assert_eq!(root, Root::Slice(a));
        assert_eq!(parts(&rest), form(&[(i, 4)], 2));
        // Scaling the index's form by the element size gives the offset without its constant.
        assert_eq!(an.linear(i).scaled(4), an.linear(j));
        // A value is its own term where nothing more is known.
        assert_eq!(parts(&an.linear(i)), form(&[(i, 1)], 0));
    }

    #[test]
    fn linear_forms_wrap_in_the_values_type() {
        let mut b = KernelBuilder::new("k");
        let p = b.param("x", ParamKind::Scalar(S::U32));
        let q = b.param("y", ParamKind::Scalar(S::U64));
        let x = def(&mut b, Op::Param(p));
        let y = def(&mut b, Op::Param(q));
        let half = b.constant(Constant::u32(0x8000_0000));
        let two = b.constant(Constant::u32(2));
        let max32 = b.constant(Constant::u32(u32::MAX));
        let one32 = b.constant(Constant::u32(1));
        let max64 = b.constant(Constant::u64(u64::MAX));
        // `x * 2^31 * 2` is 0 in 32 bits.
        let h = bin(&mut b, BinaryOp::Mul, x, half);
        let zero = bin(&mut b, BinaryOp::Mul, h, two);
        // `u32::MAX + 1` is 0.
        let c = bin(&mut b, BinaryOp::Add, max32, one32);
        // `y * (2^64 - 1) + y` is 0 in 64 bits; `x << 33` is `x << 1` (amounts wrap).
        let m = bin(&mut b, BinaryOp::Mul, y, max64);
        let y0 = bin(&mut b, BinaryOp::Add, m, y);
        let thirty_three = b.constant(Constant::u32(33));
        let s = bin(&mut b, BinaryOp::Shl, x, thirty_three);
        let k = b.finish();
        let an = Addresses::new(&k);
        assert_eq!(an.linear(zero).as_constant(), Some(0));
        assert_eq!(an.linear(c).as_constant(), Some(0));
        assert_eq!(an.linear(y0).as_constant(), Some(0));
        assert_eq!(parts(&an.linear(h)), form(&[(x, 0x8000_0000)], 0));
        assert_eq!(parts(&an.linear(s)), form(&[(x, 2)], 0));
    }

    #[test]
    fn alignment_counts_trailing_zero_bits_from_slice_bases_products_and_casts() {
        let mut b = KernelBuilder::new("k");
        let a = slice(&mut b, "a", SliceAccess::ReadWrite);
        let p = b.param("i", ParamKind::Scalar(S::U64));
        let q = b.param("x", ParamKind::Scalar(S::U32));
        let base = def(&mut b, Op::SliceBase(a));
        let i = def(&mut b, Op::Param(p));
        let x = def(&mut b, Op::Param(q));
        let sixteen = b.constant(Constant::u64(16));
        let four = b.constant(Constant::u64(4));
        let three = b.constant(Constant::u32(3));
        let mask = b.constant(Constant::u32(0xfff0));
        let i16 = bin(&mut b, BinaryOp::Mul, i, sixteen);
        let aligned = bin(&mut b, BinaryOp::Add, base, i16);
        let plus4 = bin(&mut b, BinaryOp::Add, aligned, four);
        let i4 = bin(&mut b, BinaryOp::Mul, i, four);
        let x8 = bin(&mut b, BinaryOp::Shl, x, three);
        let wide = def(
            &mut b,
            Op::Cast {
                value: x8,
                to: S::U64,
            },
        );
        let masked = bin(&mut b, BinaryOp::And, x, mask);
        let cond = def(&mut b, Op::Compare(CmpOp::Lt, i, four));
        let either = def(
            &mut b,
            Op::Select {
                cond,
                if_true: i16,
                if_false: wide,
            },
        );
        let zero = b.constant(Constant::u32(0));
        let k = b.finish();
        let an = Addresses::new(&k);
        assert_eq!(an.align_bits(base), SLICE_BASE_ALIGN_BITS);
        assert_eq!(an.align_bits(aligned), 4);
        assert_eq!(an.align_bits(plus4), 2);
        assert_eq!(an.align_bits(i4), 2);
        assert_eq!(an.align_bits(i), 0);
        assert_eq!(an.align_bits(x8), 3);
        assert_eq!(an.align_bits(wide), 3);
        assert_eq!(an.align_bits(masked), 4);
        assert_eq!(an.align_bits(either), 3);
        // Zero has every bit of its width clear; a `Bool` has no alignment.
        assert_eq!(an.align_bits(zero), 32);
        assert_eq!(an.align_bits(cond), 0);
    }

    #[test]
    fn roots_name_the_one_memory_object_an_address_is_based_on() {
        let mut b = KernelBuilder::new("k");
        let a = slice(&mut b, "a", SliceAccess::ReadOnly);
        let c = slice(&mut b, "c", SliceAccess::ReadWrite);
        let sh = b.shared_array(ArrayDecl {
            name: "tile".into(),
            elem: S::F32,
            len: 4,
        });
        let l0 = b.local_array(ArrayDecl {
            name: "x".into(),
            elem: S::F32,
            len: 3,
        });
        let l1 = b.local_array(ArrayDecl {
            name: "y".into(),
            elem: S::U32,
            len: 2,
        });
        let p = b.param("n", ParamKind::Scalar(S::U32));
        let ba = def(&mut b, Op::SliceBase(a));
        let bc = def(&mut b, Op::SliceBase(c));
        let two = b.constant(Constant::u64(2));
        let eight = b.constant(Constant::u32(8));
        let n = def(&mut b, Op::Param(p));
        let both = bin(&mut b, BinaryOp::Add, ba, bc);
        let twice = bin(&mut b, BinaryOp::Mul, ba, two);
        let diff = bin(&mut b, BinaryOp::Sub, ba, ba);
        let s = def(&mut b, Op::SharedAddr(sh));
        let s8 = bin(&mut b, BinaryOp::Add, s, eight);
        let dynamic = def(&mut b, Op::DynSharedAddr);
        let y = def(&mut b, Op::LocalAddr(l1));
        let y8 = bin(&mut b, BinaryOp::Add, y, eight);
        let x = def(&mut b, Op::LocalAddr(l0));
        let xn = bin(&mut b, BinaryOp::Add, x, n);
        let k = b.finish();
        let an = Addresses::new(&k);
        assert_eq!(an.root(ba), Some(Root::Slice(a)));
        assert_eq!(an.root(both), None, "two bases");
        assert_eq!(an.root(twice), None, "a base times 2");
        assert_eq!(an.root(diff), None, "a base minus itself");
        assert_eq!(an.linear(diff).as_constant(), Some(0));
        assert_eq!(an.root(s8), Some(Root::Shared(sh)));
        assert_eq!(an.root(dynamic), Some(Root::DynShared));
        assert_eq!(an.root(xn), Some(Root::Local(l0)));
        // `y` starts at 16: `x` is 12 bytes, and arrays are 16-byte aligned.
        assert_eq!(an.local_offset(y8), Some(24));
        assert_eq!(an.local_offset(eight), Some(8));
        assert_eq!(an.local_offset(xn), None, "a dynamic part");
        assert_eq!(an.local_offset(s8), None, "not a local address");
    }

    #[test]
    fn read_only_addresses_are_followed_through_variables() {
        let mut b = KernelBuilder::new("k");
        let a = slice(&mut b, "a", SliceAccess::ReadOnly);
        let c = slice(&mut b, "c", SliceAccess::Disjoint);
        let ba = def(&mut b, Op::SliceBase(a));
        let bc = def(&mut b, Op::SliceBase(c));
        let four = b.constant(Constant::u64(4));
        let ptr = b.var("p", S::U64);
        let mixed = b.var("m", S::U64);
        b.push(Stmt::WriteVar {
            var: ptr,
            value: ba,
        });
        b.push(Stmt::WriteVar {
            var: mixed,
            value: ba,
        });
        b.begin_block();
        // A pointer walking `a` in a loop, read before the write that advances it.
        let pv = def(&mut b, Op::ReadVar(ptr));
        let x = def(
            &mut b,
            Op::Load {
                space: AddressSpace::Global,
                ty: S::F32,
                addr: pv,
                eviction: crate::Eviction::Normal,
            },
        );
        let next = bin(&mut b, BinaryOp::Add, pv, four);
        b.push(Stmt::WriteVar {
            var: ptr,
            value: next,
        });
        // A variable that holds `a`'s base and later `c`'s.
        let mv = def(&mut b, Op::ReadVar(mixed));
        b.push(Stmt::WriteVar {
            var: mixed,
            value: bc,
        });
        // A gather: an index loaded from memory.
        let idx = def(
            &mut b,
            Op::Load {
                space: AddressSpace::Global,
                ty: S::U64,
                addr: pv,
                eviction: crate::Eviction::Normal,
            },
        );
        let scaled = bin(&mut b, BinaryOp::Mul, idx, four);
        let gather = bin(&mut b, BinaryOp::Add, ba, scaled);
        let out = bin(&mut b, BinaryOp::Add, bc, four);
        b.push(Stmt::Store {
            space: AddressSpace::Global,
            addr: out,
            value: x,
        });
        b.push(Stmt::Break);
        let body = b.end_block();
        b.push(Stmt::Loop { body });
        let k = b.finish();
        crate::validate_kernel(&k).expect("a valid kernel");
        let an = Addresses::new(&k);
        assert!(an.is_read_only(ba));
        assert!(an.is_read_only(pv), "through the variable, around the loop");
        assert!(an.is_read_only(next));
        assert!(!an.is_read_only(mv), "a or c");
        assert!(!an.is_read_only(out), "c is written");
        // Read-only-ness wants integer parts that are no loaded values; the linear form's
        // root does not look at them.
        assert!(!an.is_read_only(gather));
        assert_eq!(an.root(gather), Some(Root::Slice(a)));
        // Values the analysis has not seen: nothing known.
        let unseen = Value::from_index(10_000);
        assert!(!an.is_read_only(unseen));
        assert_eq!(an.root(unseen), None);
        assert_eq!(an.align_bits(unseen), 0);
    }

    #[test]
    fn long_sums_are_their_own_term() {
        let mut b = KernelBuilder::new("k");
        let mut sum = b.constant(Constant::u64(0));
        let mut params = Vec::new();
        for n in 0..=MAX_TERMS {
            let p = b.param(format!("x{n}"), ParamKind::Scalar(S::U64));
            let x = def(&mut b, Op::Param(p));
            params.push(x);
            sum = bin(&mut b, BinaryOp::Add, sum, x);
        }
        let k = b.finish();
        let an = Addresses::new(&k);
        assert_eq!(parts(&an.linear(sum)), form(&[(sum, 1)], 0));
        assert_eq!(an.linear(params[0]).terms().len(), 1);
    }
}
