//! Which tensor-core `mma`s are chained: one's result, through element-wise operations,
//! casts, reductions, broadcasts and the results of branches, reaches another's left
//! operand, as attention's `p = softmax(q kᵀ)` reaches `p v` (also where a branch masks
//! some iterations' scores, as causal attention written as one loop does). The planner gives such `mma`s warp grids that split
//! only the rows (`WarpGrid::rows`), FlashAttention's arrangement: each warp then holds
//! whole rows of both results, so the first result's fragments are the second's left
//! operand in registers, and the row reductions and row broadcasts between them stay
//! inside a warp (shuffles among four lanes) instead of crossing warps through shared
//! memory at every step of the loop.

use std::collections::{HashMap, HashSet};

use cuprum_tile_ir::{Block, MmaKind, Op, Stmt, TileKernel, TileValue};

/// The tensor-core `mma` results (their values) that take row-only warp grids (see the
/// module docs).
pub(crate) fn row_coupled(kernel: &TileKernel) -> HashSet<TileValue> {
    // Per value, the tensor-core mma results it is computed from (in program order, which
    // defines every operand before its use; loop-carried values start empty; a branch's
    // results from either branch's yields).
    let mut chains = Chains {
        from: HashMap::new(),
        coupled: HashSet::new(),
    };
    chains.walk(kernel, &kernel.body);
    chains.coupled
}

/// What [`row_coupled`] learns walking the kernel.
struct Chains {
    from: HashMap<TileValue, HashSet<TileValue>>,
    coupled: HashSet<TileValue>,
}

impl Chains {
    fn walk(&mut self, kernel: &TileKernel, block: &Block) {
        for s in &block.stmts {
            if let Stmt::If {
                then,
                otherwise,
                results,
                ..
            } = s
            {
                self.walk(kernel, then);
                self.walk(kernel, otherwise);
                for (i, &r) in results.iter().enumerate() {
                    let reached: HashSet<TileValue> = [then, otherwise]
                        .into_iter()
                        .filter_map(|b| b.yields.get(i))
                        .flat_map(|y| self.from.get(y).into_iter().flatten().copied())
                        .collect();
                    if !reached.is_empty() {
                        self.from.insert(r, reached);
                    }
                }
                continue;
            }
            if let Stmt::Def { value, op } = s {
                self.def(kernel, *value, op);
            }
            for b in s.nested() {
                self.walk(kernel, b);
            }
        }
    }

    fn def(&mut self, kernel: &TileKernel, value: TileValue, op: &Op) {
        let mut reached: HashSet<TileValue> = HashSet::new();
        match op {
            Op::Mma { a, acc, .. } if is_tensor_core(kernel, *a, *acc) => {
                if let Some(sources) = self.from.get(a) {
                    self.coupled.extend(sources.iter().copied());
                    if !sources.is_empty() {
                        self.coupled.insert(value);
                    }
                }
                reached.insert(value);
                reached.extend(self.from.get(acc).into_iter().flatten().copied());
            }
            // Loads read memory; only their index operands (scalars) flow in.
            Op::Load { .. } | Op::Gather { .. } => {}
            _ => {
                for o in op.operands() {
                    reached.extend(self.from.get(&o).into_iter().flatten().copied());
                }
            }
        }
        if !reached.is_empty() {
            self.from.insert(value, reached);
        }
    }
}

/// Whether `mma(a, .., acc)` sums on the tensor cores (`MmaKind::TensorCore`).
pub(crate) fn is_tensor_core(kernel: &TileKernel, a: TileValue, acc: TileValue) -> bool {
    tensor_core_shape(kernel, a, acc).is_some()
}

/// The tensor-core shape `mma(a, .., acc)` sums with, if it sums on the tensor cores.
pub(crate) fn tensor_core_shape(
    kernel: &TileKernel,
    a: TileValue,
    acc: TileValue,
) -> Option<cuprum_ir::MmaShape> {
    let (input, accum) = (
        kernel.values[a].elem.known()?,
        kernel.values[acc].elem.known()?,
    );
    MmaKind::of(input, accum)?.shape()
}

/// Per broadcast to a new shape, the other operands of the element-wise operations that
/// read it: the layouts the planner may give the broadcast, so that it is made in the
/// registers its use reads (a row maximum broadcast over a tile in the tile's own layout).
pub(crate) fn broadcast_partners(kernel: &TileKernel) -> HashMap<TileValue, Vec<TileValue>> {
    let mut broadcasts = HashSet::new();
    kernel.body.visit(&mut |s| {
        if let Stmt::Def {
            value,
            op: Op::Broadcast { value: source, .. },
        } = s
            && kernel.values[*value].shape != kernel.values[*source].shape
        {
            broadcasts.insert(*value);
        }
    });
    let mut partners: HashMap<TileValue, Vec<TileValue>> = HashMap::new();
    kernel.body.visit(&mut |s| {
        let Stmt::Def { op, .. } = s else {
            return;
        };
        let operands = match op {
            Op::Unary(..)
            | Op::Cast { .. }
            | Op::Binary(..)
            | Op::Compare(..)
            | Op::Ternary(..)
            | Op::Select { .. } => op.operands(),
            _ => return,
        };
        for &b in operands.iter().filter(|o| broadcasts.contains(o)) {
            let others = operands.iter().copied().filter(|&o| o != b);
            partners.entry(b).or_default().extend(others);
        }
    });
    partners
}
