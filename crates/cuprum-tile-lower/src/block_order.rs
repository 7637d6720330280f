//! The order in which the hardware runs tile blocks. Blocks are launched `x` fastest, so
//! the blocks resident at once are neighbours along grid axis 0. Where the tiles a block
//! streams through in its loops (attention's keys and values, indexed by the batch-head
//! axis 0 only) are shared by the blocks along another axis, the blocks running together
//! should be those: the lowering then deals tile block `(a0, a1)` to hardware block
//! `a1 + a0 * n1` (axis 1 fastest), a bijection of the grid, so that they read each
//! streamed tile from L2 instead of each from memory.

use std::collections::HashMap;

use cuprum_tile_ir::{Block, Op, Stmt, TileKernel, TileValue, View};

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
