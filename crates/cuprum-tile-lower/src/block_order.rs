//! The order in which the hardware runs tile blocks. Blocks are launched `x` fastest, so
//! the blocks resident at once are neighbours along grid axis 0. Where the tiles a block
//! streams through in its loops (attention's keys and values, indexed by the batch-head
//! axis 0 only) are shared by the blocks along another axis, the blocks running together
//! should be those: the lowering then deals tile block `(a0, a1)` to hardware block
//! `a1 + a0 * n1` (axis 1 fastest), a bijection of the grid, so that they read each
//! streamed tile from L2 instead of each from memory.
//!
//! Where a loop runs longer the further a block is along axis 1 (causal attention: a query
//! block sees the keys up to its own), the blocks of each axis-0 index are dealt from the
//! last along axis 1 down ([`axis1_descending`]): the longest start first, so that the
//! launch does not end on one long block while the others idle.

use std::collections::HashMap;

use cuprum_ir::BinaryOp;
use cuprum_tile_ir::{Block, Literal, Op, Stmt, TileKernel, TileValue, View};

/// Whether tile blocks should run grid axis 1 fastest: the read-only tiles loaded inside
/// loops depend on axis 1 in fewer loads than on axis 0.
pub(crate) fn axis1_fastest(kernel: &TileKernel) -> bool {
    let mut on_axes: HashMap<TileValue, u8> = HashMap::new();
    let mut counts = [0u32; 2];
    let mut uses_axis1 = false;
    walk(
        kernel,
        &kernel.body,
        0,
        &mut on_axes,
        &mut counts,
        &mut uses_axis1,
    );
    uses_axis1 && counts[1] < counts[0]
}

fn walk(
    kernel: &TileKernel,
    block: &Block,
    loops: usize,
    on_axes: &mut HashMap<TileValue, u8>,
    counts: &mut [u32; 2],
    uses_axis1: &mut bool,
) {
    for s in &block.stmts {
        if let Stmt::Def { value, op } = s {
            let mask = match op {
                Op::BlockId(a) => {
                    *uses_axis1 |= *a == 1;
                    1u8.checked_shl(*a).unwrap_or(0)
                }
                _ => op
                    .operands()
                    .iter()
                    .fold(0, |m, o| m | on_axes.get(o).copied().unwrap_or(0)),
            };
            if let Op::Load {
                view: View::Tiled { tensor, .. } | View::Permuted { tensor, .. },
                ..
            } = op
                && loops > 0
                && kernel.is_read_only_tensor(*tensor)
            {
                for (axis, count) in counts.iter_mut().enumerate() {
                    *count += u32::from(mask >> axis & 1);
                }
            }
            if mask != 0 {
                on_axes.insert(*value, mask);
            }
        }
        let inner = loops
            + usize::from(matches!(
                s,
                Stmt::For { .. } | Stmt::Loop { .. } | Stmt::ForTiles { .. }
            ));
        for b in s.nested() {
            walk(kernel, b, inner, on_axes, counts, uses_axis1);
        }
    }
}

/// How a value changes as the tile block's index along axis 1 grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trend {
    /// Not at all.
    Constant,
    /// Never down.
    Up,
    /// Never up.
    Down,
    /// Either way, or unknown.
    Unknown,
}

impl Trend {
    fn plus(self, other: Trend) -> Trend {
        use Trend::*;
        match (self, other) {
            (Constant, t) | (t, Constant) => t,
            (Up, Up) => Up,
            (Down, Down) => Down,
            _ => Unknown,
        }
    }

    fn negated(self) -> Trend {
        match self {
            Trend::Up => Trend::Down,
            Trend::Down => Trend::Up,
            t => t,
        }
    }
}

/// Whether the tile blocks along axis 1 should be dealt from the last down: some `for`
/// loop's end grows with the block's index along axis 1 while its start does not depend on
/// it (see the module docs). The trend is followed through constants, parameters, sums,
/// differences, products and quotients by positive integer literals, minima and maxima and
/// reshapes; anything else is unknown and decides nothing.
pub(crate) fn axis1_descending(kernel: &TileKernel) -> bool {
    let mut trends: HashMap<TileValue, Trend> = HashMap::new();
    let mut ints: HashMap<TileValue, i64> = HashMap::new();
    let mut longer = false;
    trend_walk(&kernel.body, &mut trends, &mut ints, &mut longer);
    longer
}

/// Records each value's [`Trend`] (and each integer literal, `ints`) in `block`, and sets
/// `longer` at a `for` loop that runs longer along axis 1.
fn trend_walk(
    block: &Block,
    trends: &mut HashMap<TileValue, Trend>,
    ints: &mut HashMap<TileValue, i64>,
    longer: &mut bool,
) {
    let literal = |ints: &HashMap<TileValue, i64>, v: &TileValue| ints.get(v).copied();
    for s in &block.stmts {
        match s {
            Stmt::Def { value, op } => {
                let of = |v: &TileValue| trends.get(v).copied().unwrap_or(Trend::Unknown);
                let t = match op {
                    Op::BlockId(1) => Trend::Up,
                    Op::BlockId(_)
                    | Op::NumBlocks(_)
                    | Op::Param(_)
                    | Op::TensorDim { .. }
                    | Op::Const { .. } => Trend::Constant,
                    Op::Reshape { value: a, .. } | Op::Broadcast { value: a, .. } => of(a),
                    Op::Cast { value: a, .. } => of(a),
                    Op::Binary(BinaryOp::Add, a, b)
                    | Op::Binary(BinaryOp::Min, a, b)
                    | Op::Binary(BinaryOp::Max, a, b) => of(a).plus(of(b)),
                    Op::Binary(BinaryOp::Sub, a, b) => of(a).plus(of(b).negated()),
                    Op::Binary(BinaryOp::Mul, a, b) => match (literal(ints, a), literal(ints, b)) {
                        (_, Some(k)) if k > 0 => of(a),
                        (Some(k), _) if k > 0 => of(b),
                        _ => Trend::Unknown,
                    },
                    Op::Binary(BinaryOp::Div, a, b) => match literal(ints, b) {
                        Some(k) if k > 0 => of(a),
                        _ => Trend::Unknown,
                    },
                    _ => Trend::Unknown,
                };
                if let Op::Const {
                    value: Literal::Int(k),
                    ..
                } = op
                {
                    ints.insert(*value, *k);
                }
                trends.insert(*value, t);
            }
            Stmt::For {
                start, end, body, ..
            } => {
                let of = |v: &TileValue| trends.get(v).copied().unwrap_or(Trend::Unknown);
                *longer |= of(end) == Trend::Up && of(start) == Trend::Constant;
                trend_walk(body, trends, ints, longer);
            }
            _ => {
                for b in s.nested() {
                    trend_walk(b, trends, ints, longer);
                }
            }
        }
    }
}
