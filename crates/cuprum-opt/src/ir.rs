//! Small helpers over the kernel IR that the passes share: which definitions may be deleted,
//! constants, the variables a statement writes, value substitution, the shape of a bounds
//! check, and compaction of the arenas.
//!
//! What a statement reads, defines and does is the IR's own fact (`cuprum_ir::effects`); the
//! thin names here only keep the passes short. Nothing here changes what a kernel does.

use cuprum_ir::{Arena, BinaryOp, Block, Kernel, Op, ScalarType, Stmt, Value, Var};

/// Whether `op` has no effect and its result depends only on its operands and on which
/// thread runs it ([`Op::is_pure`], the IR's one definition).
pub(crate) fn is_pure(op: &Op) -> bool {
    op.is_pure()
}

/// Whether a definition by `op` may be deleted when nothing uses its value: pure operations
/// that cannot fault, and variable reads. An integer division or remainder stays unless its
/// divisor is a constant that cannot fault (a zero divisor is an error the emulator reports,
/// and deleting the division would hide it); loads stay because an out-of-bounds load is
/// reported too.
pub(crate) fn is_removable(
    op: &Op,
    ty: impl Fn(Value) -> ScalarType,
    konst: impl Fn(Value) -> Option<u64>,
) -> bool {
    match op {
        Op::Binary(BinaryOp::Div | BinaryOp::Rem, a, b) if ty(*a).is_int() => {
            let t = ty(*a);
            match konst(*b) {
                Some(0) | None => false,
                Some(bits) => !(t.is_signed_int() && bits == all_ones(t)),
            }
        }
        Op::ReadVar(_) => true,
        other => is_pure(other),
    }
}

/// The bits of `-1` (all ones) in type `ty`.
pub(crate) const fn all_ones(ty: ScalarType) -> u64 {
    let w = ty.bits();
    if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
}

/// The bits of every `Const` definition of the kernel, by value index.
pub(crate) fn constant_bits(kernel: &Kernel) -> Vec<Option<u64>> {
    let mut out = vec![None; kernel.values.len()];
    visit_stmts(&kernel.body, &mut |s| {
        if let Stmt::Def {
            value,
            op: Op::Const(c),
        } = s
            && let Some(slot) = out.get_mut(value.index())
        {
            *slot = Some(c.bits);
        }
    });
    out
}

/// Calls `f` on every statement of `block` and of its nested blocks, in program order
/// ([`Block::visit`]).
pub(crate) fn visit_stmts<'a>(block: &'a Block, f: &mut impl FnMut(&'a Stmt)) {
    block.visit(f);
}

/// Calls `f` on every statement of the blocks nested in `stmt` (not `stmt` itself), in
/// program order.
pub(crate) fn visit_nested<'a>(stmt: &'a Stmt, f: &mut impl FnMut(&'a Stmt)) {
    for b in stmt.nested() {
        b.visit(f);
    }
}

/// The variables `stmt` (with its nested blocks) writes.
pub(crate) fn written_vars(stmt: &Stmt) -> Vec<Var> {
    let mut out = Vec::new();
    let mut one = |s: &Stmt| {
        if let Stmt::WriteVar { var, .. } = s {
            out.push(*var);
        }
        out.extend_from_slice(s.vars_in_place());
    };
    one(stmt);
    visit_nested(stmt, &mut one);
    out
}

/// Calls `f` on every statement of `block` and of its nested blocks (parents first), which
/// it may rewrite in place but not restructure ([`Block::visit_mut`]).
pub(crate) fn visit_stmts_mut(block: &mut Block, f: &mut impl FnMut(&mut Stmt)) {
    block.visit_mut(f);
}

/// A value substitution: `map[v] = Some(w)` replaces every read of `v` by `w`. The pass that
/// fills it guarantees that `w` is visible wherever `v` is read.
#[derive(Default)]
pub(crate) struct Subst {
    map: Vec<Option<Value>>,
}

impl Subst {
    pub(crate) fn new(values: usize) -> Self {
        Self {
            map: vec![None; values],
        }
    }

    /// Replaces `from` by `to` from now on.
    pub(crate) fn set(&mut self, from: Value, to: Value) {
        let to = self.get(to);
        if from == to {
            return;
        }
        if self.map.len() <= from.index() {
            self.map.resize(from.index() + 1, None);
        }
        self.map[from.index()] = Some(to);
    }

    /// What `v` stands for now (following chains of replacements).
    pub(crate) fn get(&self, mut v: Value) -> Value {
        // A chain is at most as long as the number of values; the bound only guards against
        // a cycle, which `set` never creates.
        for _ in 0..=self.map.len() {
            match self.map.get(v.index()).copied().flatten() {
                Some(w) if w != v => v = w,
                _ => break,
            }
        }
        v
    }

    /// Rewrites the operands of `stmt` (not of its nested blocks); true if one changed.
    pub(crate) fn apply(&self, stmt: &mut Stmt) -> bool {
        let mut changed = false;
        stmt.for_each_operand_mut(|v| {
            let w = self.get(*v);
            if w != *v {
                *v = w;
                changed = true;
            }
        });
        changed
    }
}

/// Whether `stmt` is line information (`Stmt::SourceLine`): no code, so passes that count
/// statements or look for patterns of them look past it (it must change no instruction).
pub(crate) fn is_line_info(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::SourceLine { .. })
}

/// Whether `stmt` leaves the block for every lane that reaches it ([`Stmt::is_terminator`]).
pub(crate) fn is_terminator(stmt: &Stmt) -> bool {
    stmt.is_terminator()
}

/// Whether every lane that runs `block` leaves it at its end or before
/// ([`Block::always_exits`]).
pub(crate) fn always_exits(block: &Block) -> bool {
    block.always_exits()
}

/// The condition of a check: `If { cond, then: [], otherwise: [Trap] }` (as the front end
/// and the `checks` pass write them).
pub(crate) fn check_cond(stmt: &Stmt) -> Option<Value> {
    match stmt {
        Stmt::If {
            cond,
            then,
            otherwise,
        } if then.stmts.is_empty() && matches!(otherwise.stmts.as_slice(), [Stmt::Trap(_)]) => {
            Some(*cond)
        }
        _ => None,
    }
}

/// Drops from the arenas the values no statement defines any more and the variables no
/// statement reads or writes (the validator asks every value of the arena to be defined),
/// and renumbers the values in the order the body defines them, so that printed IR and
/// PTX registers read top to bottom.
pub(crate) fn compact(kernel: &mut Kernel) {
    let mut order: Vec<Value> = Vec::with_capacity(kernel.values.len());
    let mut var_used = vec![false; kernel.vars.len()];
    visit_stmts(&kernel.body, &mut |s| {
        order.extend_from_slice(s.results());
        let var = match s {
            Stmt::WriteVar { var, .. }
            | Stmt::Def {
                op: Op::ReadVar(var),
                ..
            } => Some(*var),
            _ => None,
        };
        if let Some(u) = var.and_then(|var| var_used.get_mut(var.index())) {
            *u = true;
        }
        for var in s.vars_in_place() {
            if let Some(u) = var_used.get_mut(var.index()) {
                *u = true;
            }
        }
    });
    let in_order =
        order.len() == kernel.values.len() && order.iter().enumerate().all(|(i, v)| v.index() == i);
    if in_order && var_used.iter().all(|&u| u) {
        return;
    }
    let mut values = Arena::new();
    let mut value_map: Vec<Value> = kernel.values.iter().map(|(v, _)| v).collect();
    for &v in &order {
        if let (Some(def), Some(slot)) = (kernel.values.try_get(v), value_map.get_mut(v.index())) {
            *slot = values.append(def.clone());
        }
    }
    let mut vars = Arena::new();
    let mut var_map: Vec<Var> = Vec::with_capacity(var_used.len());
    for (v, def) in kernel.vars.iter() {
        var_map.push(if var_used[v.index()] {
            vars.append(def.clone())
        } else {
            v
        });
    }
    let remap = |v: &mut Value| {
        if let Some(&w) = value_map.get(v.index()) {
            *v = w;
        }
    };
    visit_stmts_mut(&mut kernel.body, &mut |s| {
        s.for_each_operand_mut(remap);
        s.results_mut().iter_mut().for_each(remap);
        let var = match s {
            Stmt::WriteVar { var, .. }
            | Stmt::Def {
                op: Op::ReadVar(var),
                ..
            } => Some(var),
            _ => None,
        };
        if let Some(var) = var
            && let Some(&w) = var_map.get(var.index())
        {
            *var = w;
        }
        for var in s.vars_in_place_mut() {
            if let Some(&w) = var_map.get(var.index()) {
                *var = w;
            }
        }
    });
    kernel.values = values;
    kernel.vars = vars;
}
