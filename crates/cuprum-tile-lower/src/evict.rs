//! Which cache eviction hint ([`Eviction`]) each tile load carries: the compiler's choice, as
//! Inductor makes it for its multi-loop reductions, so that a tile kernel that reads a row
//! twice (a layer norm's statistics, then its output) keeps the row in the caches between
//! the reads and lets it go after the last one.
//!
//! The rule, per read-only tensor loaded at more than one place of the kernel, each place
//! run at most once per block (outside loops, or in `for` loops of one known trip): every
//! load but the last (in program order) is `Last`; the last is `First` when its tile index
//! depends on the block index (each block streams its own tiles, which no other block
//! reads), else `Normal` (other blocks read the same tile: it must not be pushed out
//! first). Every other load is `Normal`: a tensor loaded at one place, a partitioned
//! tensor's own tile, and a tensor loaded in a loop that may run more than once. The hints
//! never change what a load returns (see [`Eviction`]).
//!
//! Measured on the H200 (16384x4096 f32, rows of one tile): RMS norm 0.1330 to 0.1291 ms,
//! layer norm in the same two-pass shape 0.1348 to 0.1327 ms, as Inductor's kernels run
//! them. With the row in two column blocks (each pass a loop of two trips, each trip's
//! stores between the loads) the same hints made the layer norm 15% slower (0.1384 to
//! 0.1600 ms; the L2 policy alone 0.1545), hence the one-trip condition.

use std::collections::{HashMap, HashSet};

use cuprum_ir::{BinaryOp, Constant, Eviction, ScalarType};
use cuprum_tile_ir::{Block, Elem, Literal, Op, Stmt, TileKernel, TileValue, View};

/// The eviction hint of each tile load (keyed by the loaded value) that is not `Normal`.
pub(crate) fn plan(kernel: &TileKernel) -> HashMap<TileValue, Eviction> {
    let varying = block_dependent(kernel);
    let mut defs = HashMap::new();
    kernel.body.visit(&mut |s| {
        if let Stmt::Def { value, op } = s {
            defs.insert(*value, op);
        }
    });
    let mut sites = Sites::default();
    collect(kernel, &kernel.body, false, &varying, &defs, &mut sites);
    let mut out = HashMap::new();
    for (tensor, loads) in &sites.loads {
        if loads.len() < 2 || sites.repeated.contains(tensor) {
            continue;
        }
        let Some(((last, last_varies), earlier)) = loads.split_last() else {
            continue;
        };
        for (value, _) in earlier {
            out.insert(*value, Eviction::Last);
        }
        if *last_varies {
            out.insert(*last, Eviction::First);
        }
    }
    out
}

/// Per read-only tensor, its loads in program order (with whether each one's index varies
/// between blocks), and the tensors loaded somewhere that may run more than once.
#[derive(Default)]
struct Sites {
    loads: HashMap<u32, Vec<(TileValue, bool)>>,
    repeated: HashSet<u32>,
}

/// Records the loads of read-only tensors in `block` (inside a loop that may repeat when
/// `repeats`).
fn collect(
    kernel: &TileKernel,
    block: &Block,
    repeats: bool,
    varying: &HashSet<TileValue>,
    defs: &HashMap<TileValue, &Op>,
    sites: &mut Sites,
) {
    for s in &block.stmts {
        if let Stmt::Def {
            value,
            op:
                Op::Load {
                    view: View::Tiled { tensor, index, .. } | View::Permuted { tensor, index, .. },
                    ..
                },
        } = s
            && kernel.is_read_only_tensor(*tensor)
        {
            let varies = index.iter().any(|i| varying.contains(i));
            sites
                .loads
                .entry(*tensor)
                .or_default()
                .push((*value, varies));
            if repeats {
                sites.repeated.insert(*tensor);
            }
        }
        let inner = repeats
            || match s {
                Stmt::For {
                    start, end, step, ..
                } => trips(defs, *start, *end, *step).is_none_or(|n| n > 1),
                Stmt::Loop { .. } => true,
                _ => false,
            };
        for b in s.nested() {
            collect(kernel, b, inner, varying, defs, sites);
        }
    }
}

/// The trip count of a `for` loop whose bounds are known integers.
fn trips(
    defs: &HashMap<TileValue, &Op>,
    start: TileValue,
    end: TileValue,
    step: TileValue,
) -> Option<i64> {
    let (start, end, step) = (
        known_int(defs, start, 0)?,
        known_int(defs, end, 0)?,
        known_int(defs, step, 0)?,
    );
    if step <= 0 {
        return None;
    }
    Some(if end <= start {
        0
    } else {
        (end - start - 1) / step + 1
    })
}

/// The value of a rank-0 integer computed from constants by `+`, `-`, `*` and `/` without
/// leaving its type's range (else `None`, as for anything else).
fn known_int(defs: &HashMap<TileValue, &Op>, v: TileValue, depth: u32) -> Option<i64> {
    if depth > 16 {
        return None;
    }
    let int = |c: Constant| -> Option<i64> {
        let ty = c.ty;
        if ty.is_float() || ty == ScalarType::Bool {
            return None;
        }
        let shift = 64 - ty.bits();
        if ty.is_signed_int() {
            Some(((c.bits << shift) as i64) >> shift)
        } else {
            i64::try_from(c.bits).ok()
        }
    };
    let fits = |x: i64, ty: ScalarType| int(Constant::new(ty, x as u64)) == Some(x);
    match defs.get(&v)? {
        Op::Const {
            value: Literal::Exact(c),
            ..
        } => int(*c),
        Op::Const {
            value: Literal::Int(i),
            elem: Elem::Known(ty),
            ..
        } => fits(*i, *ty).then_some(*i),
        Op::Binary(op, a, b) => {
            let (x, y) = (
                known_int(defs, *a, depth + 1)?,
                known_int(defs, *b, depth + 1)?,
            );
            let r = match op {
                BinaryOp::Add => x.checked_add(y)?,
                BinaryOp::Sub => x.checked_sub(y)?,
                BinaryOp::Mul => x.checked_mul(y)?,
                BinaryOp::Div if y != 0 => x.checked_div(y)?,
                _ => return None,
            };
            // Exact where it fits the operands' type (known where one is a constant;
            // else `i32`, the narrowest type the front end gives loop bounds).
            let ty = [a, b]
                .iter()
                .find_map(|o| match defs.get(*o) {
                    Some(Op::Const {
                        elem: Elem::Known(ty),
                        ..
                    }) => Some(*ty),
                    _ => None,
                })
                .unwrap_or(ScalarType::I32);
            fits(r, ty).then_some(r)
        }
        _ => None,
    }
}

/// The values that may differ between tile blocks: the block index and everything computed
/// from it, and every loaded value (memory differs by place); where control merges (a
/// branch's results, a loop's arguments and results), the merged values when a condition,
/// a trip count or a merged value may differ. Over-approximate: a value marked here may
/// still be the same in every block.
fn block_dependent(kernel: &TileKernel) -> HashSet<TileValue> {
    let mut varying = HashSet::new();
    // Loops carry values back to their start: repeat until a round marks nothing.
    while mark(&kernel.body, &mut varying) {}
    varying
}

/// One round over `block`; true if it marked a value.
fn mark(block: &Block, varying: &mut HashSet<TileValue>) -> bool {
    let mut changed = false;
    for s in &block.stmts {
        let mut merged: Vec<TileValue> = Vec::new();
        // What the statement reads itself: a definition's operands, a branch's condition,
        // a loop's bounds and initial values.
        let reads_varying = s.operands().iter().any(|v| varying.contains(v));
        match s {
            Stmt::Def { value, op }
                if reads_varying || matches!(op, Op::BlockId(_) | Op::Load { .. }) =>
            {
                merged.push(*value);
            }
            Stmt::If {
                then,
                otherwise,
                results,
                ..
            } if reads_varying
                || then
                    .yields
                    .iter()
                    .chain(&otherwise.yields)
                    .any(|v| varying.contains(v)) =>
            {
                merged.extend(results);
            }
            Stmt::For {
                counter,
                args,
                body,
                results,
                ..
            } => {
                if reads_varying {
                    merged.push(*counter);
                }
                if reads_varying || exits_vary(body, varying) {
                    merged.extend(args.iter().chain(results));
                }
            }
            Stmt::Loop {
                args,
                body,
                results,
                ..
            } if reads_varying || exits_vary(body, varying) => {
                merged.extend(args.iter().chain(results));
            }
            _ => {}
        }
        for v in merged {
            changed |= varying.insert(v);
        }
        for b in s.nested() {
            changed |= mark(b, varying);
        }
    }
    changed
}

/// Whether a loop body may end an iteration differently in different blocks: a varying
/// yield, `break` or `continue` value, or a branch on a varying condition anywhere inside.
fn exits_vary(body: &Block, varying: &HashSet<TileValue>) -> bool {
    let mut found = body.yields.iter().any(|v| varying.contains(v));
    body.visit(&mut |s| match s {
        Stmt::If { cond, .. } if varying.contains(cond) => found = true,
        Stmt::Break { values } | Stmt::Continue { values }
            if values.iter().any(|v| varying.contains(v)) =>
        {
            found = true
        }
        _ => {}
    });
    found
}
