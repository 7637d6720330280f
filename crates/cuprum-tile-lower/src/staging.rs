//! Which tile loads go from global memory straight to the shared memory a tensor-core
//! `mma` reads its operands from (`cp.async`, sixteen bytes per copy), instead of through
//! registers: loads of 16-bit elements from read-only tensors whose every use is an operand
//! of an `mma` that reads it with `ldmatrix` (directly, or as the transposed `B` a `[1, 0]`
//! permutation of it is). Such a load is made where the `mma` stages its operands
//! (`emit::staged`); its tile never occupies registers, which is what lets attention's key and
//! value tiles pass without the 64 registers per thread each held before.

use std::collections::{HashMap, HashSet};

use cuprum_ir::MmaShape;
use cuprum_tile_ir::{Block, Op, Stmt, TileKernel, TileValue, View};

use crate::mma_layout;
use crate::plan::{LayoutId, Plan, Repr};

/// The loads to stage (see the module docs), given the kernel's plan. A staged tile is a
/// rank-2 load or a reshape of a load that drops its leading axes of size 1 (as
/// `partition([1, BN, D]).load(..).reshape([BN, D])` is).
pub(crate) fn staged_loads(kernel: &TileKernel, plan: &Plan) -> HashSet<TileValue> {
    let uses = use_counts(&kernel.body);
    let (loads, tiles) = stageable_tiles(kernel, plan);
    let mut transposes: HashMap<TileValue, TileValue> = HashMap::new();
    // Per value, its uses as an operand read with `ldmatrix`, and those as a `B`.
    let (mut staged_uses, mut b_uses): (HashMap<_, usize>, HashMap<_, usize>) = Default::default();
    kernel.body.visit(&mut |s| {
        let Stmt::Def { value, op } = s else {
            return;
        };
        match op {
            Op::Permute { value: x, perm } if perm[..] == [1, 0] => {
                transposes.insert(*value, *x);
            }
            Op::Mma { a, b, acc } if reads_with_ldmatrix(kernel, plan, *value, *a, *acc) => {
                *staged_uses.entry(*a).or_default() += 1;
                *staged_uses.entry(*b).or_default() += 1;
                *b_uses.entry(*b).or_default() += 1;
            }
            _ => {}
        }
    });
    let all_uses = |v: &TileValue| uses.get(v).copied().unwrap_or(0);
    for (&t, &x) in &transposes {
        if all_uses(&t) > 0 && b_uses.get(&t).copied().unwrap_or(0) == all_uses(&t) {
            *staged_uses.entry(x).or_default() += 1;
        }
    }
    // Per load, its uses through staged tiles; a load qualifies when those are all of them.
    let mut through: HashMap<TileValue, usize> = HashMap::new();
    for (&t, &load) in &tiles {
        let staged = staged_uses.get(&t).copied().unwrap_or(0);
        // A tile put in fragments once (loop-invariant, `Plan::eager_layout`) is loaded
        // once, not copied again at every step.
        if all_uses(&t) > 0 && staged == all_uses(&t) && plan.eager_layout(t).is_none() {
            *through.entry(load).or_default() += if t == load { all_uses(&t) } else { 1 };
        }
    }
    loads
        .into_iter()
        .filter(|v| {
            all_uses(v) > 0
                && through.get(v).copied() == Some(all_uses(v))
                && plan.eager_layout(*v).is_none()
        })
        .collect()
}

/// Loads that may be copied straight into the shared memory of the loop-invariant tensor-core
/// operand they make (`emit::wgmma_mma`'s resident tiles), per load that operand: a
/// stageable load (see [`stageable_load`]) read once, by the operand (the load itself or a
/// reshape that drops leading axes of size 1), which is defined outside the loops that read
/// it ([`Plan::eager_layout`]). Whether the operand does stay in shared memory is the
/// emitter's call (`Emitter::stays_resident`).
pub(crate) fn resident_candidates(
    kernel: &TileKernel,
    plan: &Plan,
) -> HashMap<TileValue, TileValue> {
    let uses = use_counts(&kernel.body);
    let (_, tiles) = stageable_tiles(kernel, plan);
    tiles
        .into_iter()
        .filter(|&(tile, load)| {
            plan.eager_layout(tile).is_some()
                && (tile == load || uses.get(&load).copied() == Some(1))
        })
        .map(|(tile, load)| (load, tile))
        .collect()
}

/// The stageable loads (see [`stageable_load`]), and per staged-tile candidate (a rank-2
/// stageable load, or a reshape of one that drops leading axes of size 1) its load.
fn stageable_tiles(
    kernel: &TileKernel,
    plan: &Plan,
) -> (HashSet<TileValue>, HashMap<TileValue, TileValue>) {
    let mut loads = HashSet::new();
    let mut tiles = HashMap::new();
    kernel.body.visit(&mut |s| {
        let Stmt::Def { value, op } = s else {
            return;
        };
        match op {
            Op::Load {
                view: View::Tiled { tensor, .. },
                ..
            } if stageable_load(kernel, plan, *value, *tensor) => {
                loads.insert(*value);
                if kernel.values[*value].shape.len() == 2 {
                    tiles.insert(*value, *value);
                }
            }
            Op::Reshape { value: x, .. }
                if loads.contains(x)
                    && kernel.values[*value].shape.len() == 2
                    && kernel.values[*x]
                        .shape
                        .ends_with(&kernel.values[*value].shape) =>
            {
                tiles.insert(*value, *x);
            }
            _ => {}
        }
    });
    (loads, tiles)
}

/// Whether `value = load(tensor, ..)` can be staged: a tile of 16-bit elements whose axes
/// but the last two are of size 1 and whose rows are whole 16-byte copies, from a tensor
/// nobody writes during the launch, planned in registers.
fn stageable_load(kernel: &TileKernel, plan: &Plan, value: TileValue, tensor: u32) -> bool {
    let read_only = kernel.is_read_only_tensor(tensor);
    let ty = &kernel.values[value];
    let shape = cuprum_tile_ir::known_sizes(&ty.shape);
    read_only
        && ty.elem.known().is_some_and(|e| e.size_bytes() == 2)
        && shape.is_some_and(|s| {
            s.len() >= 2 && s[..s.len() - 2].iter().all(|&n| n == 1) && s[s.len() - 1] % 8 == 0
        })
        && matches!(plan.repr(value), Some(Repr::Dist(_)))
}

/// Whether tensor-core `value = mma(a, .., acc)` reads its operands with `ldmatrix` when
/// they are staged: the condition `emit::matmul`'s `operand_sources` tests.
pub(crate) fn reads_with_ldmatrix(
    kernel: &TileKernel,
    plan: &Plan,
    value: TileValue,
    a: TileValue,
    acc: TileValue,
) -> bool {
    let Some(shape) = crate::mma_chains::tensor_core_shape(kernel, a, acc) else {
        return false;
    };
    let k = cuprum_tile_ir::known_sizes(&kernel.values[a].shape).and_then(|s| s.last().copied());
    plan.mma_inputs(value)
        .is_some_and(|ls| ldmatrix_reads(plan, shape, k, ls))
}

/// Whether `ldmatrix` can read the operands of an `mma` of `shape` whose `K` is `k` from
/// shared memory, their fragment layouts being `layouts`: 16-bit inputs (`ldmatrix` reads
/// 16-bit elements; `tf32` fragments come from registers), `K` whole steps of 16 (else it
/// would read past the rows) and no warp reaching past the tile (whose registers must hold
/// copies of the last row or column, which only the register path gives). The one rule
/// `staged_loads` and `emit::matmul` ask.
pub(crate) fn ldmatrix_reads(
    plan: &Plan,
    shape: MmaShape,
    k: Option<u32>,
    layouts: [LayoutId; 2],
) -> bool {
    shape.elements_per_register() == 2
        && k.is_some_and(|k| k.is_multiple_of(mma_layout::block_k(shape)))
        && layouts.iter().all(|&l| plan.layout(l).never_clamps())
}

/// How many times each value is read in `block` (nested blocks too): statements' operands
/// and blocks' yields.
pub(crate) fn use_counts(block: &Block) -> HashMap<TileValue, usize> {
    let mut uses = HashMap::new();
    count_uses(block, &mut uses);
    uses
}

/// Adds every read of each value in `block` to `uses`.
fn count_uses(block: &Block, uses: &mut HashMap<TileValue, usize>) {
    for s in &block.stmts {
        for o in s.operands() {
            *uses.entry(o).or_default() += 1;
        }
        for b in s.nested() {
            count_uses(b, uses);
        }
    }
    for &y in &block.yields {
        *uses.entry(y).or_default() += 1;
    }
}
