//! Promotion of per-thread local arrays to variables (registers).
//!
//! Local memory is slow: a `.local` array is backed by device memory (through L1), and
//! ptxas only keeps an array in registers when it can see every index, which it often
//! cannot through our address arithmetic. Fixed-size arrays whose every access is at a
//! constant position (mma fragments, small accumulators once their loops are unrolled,
//! tuples taken apart) become one [`Var`](cuprum_ir::Var) per element: a `Load` from
//! element `k` becomes a `ReadVar`, a `Store` a `WriteVar`, and the PTX writer gives each
//! variable a register.
//!
//! Local addresses are byte offsets in a layout the IR defines ([`cuprum_ir::array_layout`]),
//! so an address computed from one array can reach another. Every local access of the
//! kernel is therefore classified:
//!
//! * at a constant address: `LocalAddr(i)` (whose value the layout gives) plus or minus
//!   constants (read from the kernel's address analysis, [`cuprum_ir::Addresses::local_offset`]);
//! * within a range of addresses, from the known ranges of the dynamic part (`crate::facts`:
//!   the front end's bounds check `index < len` before `array[index]` bounds the index);
//! * anywhere (no bound known).
//!
//! Array `i` is promoted when no ranged or unbounded access can touch its bytes, and every
//! constant access that touches them reads or writes exactly one whole element, with the
//! element's type. An array with any dynamic access stays in memory, and so does every array
//! when some access cannot be bounded at all. A promoted array's declaration is dropped when
//! that cannot move another array's bytes: when it is the last ones of the list, or when no
//! local access and no local address remain.
//!
//! Reading a local element before writing it gives whatever memory held (unspecified in the
//! IR); a promoted element reads as a variable does before its first write.

use cuprum_ir::{
    AddressSpace, Addresses, ArrayDecl, Block, Kernel, Op, ScalarType, Stmt, Value, VarDef,
    array_layout,
};

use crate::analyses::Analyses;
use crate::facts::{Defs, Facts, Ranges};
use crate::ir::{always_exits, compact, visit_stmts, visit_stmts_mut};

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    run_with(kernel, &mut Analyses::new())
}

/// [`run`], taking the kernel's definitions and address analysis from `analyses` (and
/// returning them there when nothing changed).
pub fn run_with(kernel: &mut Kernel, analyses: &mut Analyses) -> bool {
    if kernel.locals.is_empty() {
        return false;
    }
    let (offsets, _) = array_layout(&kernel.locals);
    let addrs = analyses.take_addresses(kernel);
    let mut scan = Scan {
        defs: analyses.take_defs(kernel),
        facts: Facts::default(),
        offsets: &offsets,
        addrs: &addrs,
        accesses: Vec::new(),
    };
    scan.block(&kernel.body);
    let accesses = scan.accesses;

    let promoted: Vec<bool> = (0..kernel.locals.len())
        .map(|i| promotable(kernel, &offsets, i, &accesses))
        .collect();
    if !promoted.iter().any(|&p| p) {
        analyses.keep_defs(scan.defs);
        analyses.keep_addresses(addrs);
        return false;
    }

    // One variable per element, created on first use.
    let locals = kernel.locals.clone();
    let mut vars: Vec<Vec<Option<cuprum_ir::Var>>> =
        locals.iter().map(|a| vec![None; a.len as usize]).collect();
    let mut body = std::mem::take(&mut kernel.body);
    let mut new_vars = std::mem::take(&mut kernel.vars);
    let mut var_of = |kernel_vars: &mut cuprum_ir::Arena<VarDef>, addr: Value| {
        let a = u64::from(addrs.local_offset(addr)?);
        let i = array_at(&locals, &offsets, a).filter(|&i| promoted[i])?;
        let decl = &locals[i];
        let k = ((a - u64::from(offsets[i])) / u64::from(decl.elem.size_bytes())) as usize;
        let slot = vars.get_mut(i)?.get_mut(k)?;
        Some(*slot.get_or_insert_with(|| {
            kernel_vars.append(VarDef {
                name: format!("{}_{k}", decl.name),
                ty: decl.elem,
            })
        }))
    };
    visit_stmts_mut(&mut body, &mut |s| match s {
        Stmt::Def {
            op:
                op @ Op::Load {
                    space: AddressSpace::Local,
                    ..
                },
            ..
        } => {
            if let Op::Load { addr, .. } = op
                && let Some(var) = var_of(&mut new_vars, *addr)
            {
                *op = Op::ReadVar(var);
            }
        }
        Stmt::Store {
            space: AddressSpace::Local,
            addr,
            value,
        } => {
            if let Some(var) = var_of(&mut new_vars, *addr) {
                *s = Stmt::WriteVar { var, value: *value };
            }
        }
        _ => {}
    });
    kernel.body = body;
    kernel.vars = new_vars;
    crate::dce::run(kernel);
    drop_declarations(kernel, &promoted);
    compact(kernel);
    true
}

/// One local load or store, as the scan saw it.
struct Access {
    /// The first byte it may touch and the last (inclusive) start address.
    lo: u64,
    hi: u64,
    /// Whether the address is exactly `lo` (a constant).
    exact: bool,
    size: u64,
    ty: ScalarType,
}

/// Whether array `i` can become variables, given every local access of the kernel.
fn promotable(kernel: &Kernel, offsets: &[u32], i: usize, accesses: &[Access]) -> bool {
    let decl = &kernel.locals[i];
    let start = u64::from(offsets[i]);
    let end = start + u64::from(decl.size_bytes());
    let elem = u64::from(decl.elem.size_bytes());
    accesses.iter().all(|a| {
        let touches = a.lo < end && a.hi + a.size > start;
        !touches
            || (a.exact
                && a.lo >= start
                && a.lo + a.size <= end
                && (a.lo - start) % elem == 0
                && a.size == elem
                && a.ty == decl.elem)
    })
}

/// The array whose bytes contain local address `a`.
fn array_at(locals: &[ArrayDecl], offsets: &[u32], a: u64) -> Option<usize> {
    locals.iter().zip(offsets).position(|(decl, &o)| {
        let start = u64::from(o);
        a >= start && a < start + u64::from(decl.size_bytes())
    })
}

/// Drops the declarations of promoted arrays that nothing refers to any more, where that
/// moves no other array: all of them when no local access or address is left, otherwise
/// those at the end of the list.
fn drop_declarations(kernel: &mut Kernel, promoted: &[bool]) {
    let mut referenced = vec![false; kernel.locals.len()];
    let mut any_left = false;
    visit_stmts(&kernel.body, &mut |s| {
        if let Stmt::Def {
            op: Op::LocalAddr(i),
            ..
        } = s
        {
            any_left = true;
            if let Some(r) = referenced.get_mut(*i as usize) {
                *r = true;
            }
        }
        let e = s.effects(|| true);
        if e.reads.union(e.writes).contains(AddressSpace::Local) {
            any_left = true;
        }
    });
    let unused = |i: usize| promoted.get(i).copied().unwrap_or(false) && !referenced[i];
    if !any_left {
        let mut i = 0;
        kernel.locals.retain(|_| {
            i += 1;
            !unused(i - 1)
        });
    } else {
        while !kernel.locals.is_empty() && unused(kernel.locals.len() - 1) {
            kernel.locals.pop();
        }
    }
}

/// The walk that classifies every local access, with the facts holding at it.
struct Scan<'a> {
    defs: Defs,
    facts: Facts,
    offsets: &'a [u32],
    addrs: &'a Addresses,
    accesses: Vec<Access>,
}

impl Scan<'_> {
    /// A vector access of `lanes` elements: it keeps in memory every array it may touch
    /// (recorded as a ranged access of the whole vector's bytes).
    fn vector_access(&mut self, addr: Value, ty: ScalarType, lanes: usize) {
        self.access(addr, ty);
        if let Some(a) = self.accesses.last_mut() {
            a.exact = false;
            a.size *= lanes as u64;
        }
    }

    fn access(&mut self, addr: Value, ty: ScalarType) {
        let size = u64::from(ty.size_bytes());
        let (lo, hi, exact) = match self.addrs.local_offset(addr) {
            Some(a) => (u64::from(a), u64::from(a), true),
            None => {
                let ranges = Ranges {
                    defs: &self.defs,
                    facts: &self.facts,
                    locals: self.offsets,
                };
                let (lo, hi) = ranges.of(addr).unwrap_or((0, u64::from(u32::MAX)));
                (lo, hi, false)
            }
        };
        self.accesses.push(Access {
            lo,
            hi,
            exact,
            size,
            ty,
        });
    }

    fn block(&mut self, block: &Block) {
        let mark = self.facts.mark();
        for s in &block.stmts {
            if let Some(a) = s.access()
                && a.space == AddressSpace::Local
            {
                let ty =
                    a.ty.or_else(|| a.stored.first().map(|&v| self.defs.ty(v)))
                        .unwrap_or(ScalarType::U8);
                if a.count == 1 {
                    self.access(a.addr, ty);
                } else {
                    self.vector_access(a.addr, ty, a.count);
                }
                continue;
            }
            match s {
                Stmt::Def {
                    value,
                    op: Op::Compare(c, l, r),
                } => {
                    let ranges = Ranges {
                        defs: &self.defs,
                        facts: &self.facts,
                        locals: self.offsets,
                    };
                    if let Some(b) = ranges.decide(*c, *l, *r) {
                        self.facts.assume(&self.defs, *value, b);
                    }
                }
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let m = self.facts.mark();
                    self.facts.assume(&self.defs, *cond, true);
                    self.block(then);
                    self.facts.undo(m);
                    self.facts.assume(&self.defs, *cond, false);
                    self.block(otherwise);
                    self.facts.undo(m);
                    match (always_exits(then), always_exits(otherwise)) {
                        (false, true) => self.facts.assume(&self.defs, *cond, true),
                        (true, false) => self.facts.assume(&self.defs, *cond, false),
                        _ => {}
                    }
                }
                Stmt::Loop { body } => self.block(body),
                _ => {}
            }
        }
        self.facts.undo(mark);
    }
}
