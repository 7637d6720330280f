//! What a case exercises, by name: its operations, statements, reductions, element types,
//! tile ranks and views. The tests take the union over the seeds they run and require
//! every name of [`COVERED`], so that a generator that stops making something fails loudly.

use std::collections::BTreeSet;

use cuprum_ir::ScalarType;
use cuprum_tile_ir::{Combine, Op, Stmt, TensorAccess, View};

use crate::{ArgData, Case};

/// Everything the generator makes over enough seeds. (Not here: generic kernels and their
/// const parameters, prints and assertions that fail, and transcendental functions, which
/// the directed tests cover.)
pub const COVERED: &[&str] = &[
    "const",
    "param",
    "block_id",
    "num_blocks",
    "tensor_dim",
    "iota",
    "mma",
    "mma on the tensor cores",
    "mma of tf32 on the tensor cores",
    "unary Neg",
    "unary Not",
    "unary Abs",
    "unary Sqrt",
    "unary Floor",
    "unary Ceil",
    "unary Round",
    "unary Trunc",
    "binary Add",
    "binary Sub",
    "binary Mul",
    "binary Div",
    "binary Rem",
    "binary And",
    "binary Or",
    "binary Xor",
    "binary Shl",
    "binary Shr",
    "binary Min",
    "binary Max",
    "mul_add",
    "compare Eq",
    "compare Ne",
    "compare Lt",
    "compare Le",
    "compare Gt",
    "compare Ge",
    "select",
    "cast",
    "bitcast",
    "broadcast",
    "reshape",
    "permute",
    "reduce Sum",
    "reduce Prod",
    "reduce Min",
    "reduce Max",
    "reduce closure",
    "reduce closure with an if",
    "load of a tile",
    "load of a rank-0 tensor",
    "load of its own tile",
    "store",
    "gather",
    "scatter",
    "if",
    "if with results",
    "for",
    "loop",
    "break",
    "continue",
    "return",
    "assert",
    "elem bool",
    "elem i8",
    "elem i16",
    "elem i32",
    "elem i64",
    "elem u8",
    "elem u16",
    "elem u32",
    "elem u64",
    "elem f16",
    "elem bf16",
    "elem f32",
    "elem f64",
    "tile rank 1",
    "tile rank 2",
    "tile rank 3",
    "ragged edge tile",
    "view contiguous",
    "view with padded or reordered strides",
    "view with a negative stride",
    "view with a zero stride",
    "view at an offset",
    "tensor with no element",
    "output view not contiguous",
    "warps chosen",
    "occupancy chosen",
];

fn op_name(op: &Op) -> String {
    match op {
        Op::Const { .. } => "const".into(),
        Op::ConstParam(_) => "const_param".into(),
        Op::Param(_) => "param".into(),
        Op::BlockId(_) => "block_id".into(),
        Op::NumBlocks(_) => "num_blocks".into(),
        Op::TensorDim { .. } => "tensor_dim".into(),
        Op::Iota { .. } => "iota".into(),
        Op::Unary(u, _) => format!("unary {u:?}"),
        Op::Binary(b, _, _) => format!("binary {b:?}"),
        Op::Ternary(..) => "mul_add".into(),
        Op::Mma { .. } => "mma".into(),
        Op::Compare(c, _, _) => format!("compare {c:?}"),
        Op::Select { .. } => "select".into(),
        Op::Cast { .. } => "cast".into(),
        Op::Bitcast { .. } => "bitcast".into(),
        Op::Broadcast { .. } => "broadcast".into(),
        Op::Reshape { .. } => "reshape".into(),
        Op::Permute { .. } => "permute".into(),
        Op::Reduce { combine, .. } => match combine {
            Combine::Sum => "reduce Sum".into(),
            Combine::Prod => "reduce Prod".into(),
            Combine::Min => "reduce Min".into(),
            Combine::Max => "reduce Max".into(),
            Combine::Closure { .. } => "reduce closure".into(),
        },
        Op::Gather { .. } => "gather".into(),
        Op::Load { view, .. } => match view {
            View::Own { .. } => "load of its own tile".into(),
            View::Tiled { tile, .. } if tile.is_empty() => "load of a rank-0 tensor".into(),
            View::Tiled { .. } => "load of a tile".into(),
            View::Permuted { .. } => "load of a permuted tile".into(),
        },
    }
}

/// The names of what `case` exercises (see the module docs).
pub fn coverage(case: &Case) -> BTreeSet<&'static str> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    let k = &case.kernel;
    k.body.visit(&mut |s| {
        let name = match s {
            Stmt::Def { op, .. } => {
                if let Op::Reduce {
                    combine: Combine::Closure { body, .. },
                    ..
                } = op
                    && body.stmts.iter().any(|s| matches!(s, Stmt::If { .. }))
                {
                    names.insert("reduce closure with an if".into());
                }
                if let Op::Mma { a, .. } = op
                    && let Some(e) = k.values[*a].elem.known()
                {
                    if e.size_bytes() == 2 {
                        names.insert("mma on the tensor cores".into());
                    }
                    if e == ScalarType::Tf32 {
                        names.insert("mma of tf32 on the tensor cores".into());
                    }
                }
                op_name(op)
            }
            Stmt::Store { .. } => "store".into(),
            Stmt::StorePart { .. } => "store part".into(),
            Stmt::Scatter { .. } => "scatter".into(),
            Stmt::ForTiles { .. } => "for over mapped tiles".into(),
            Stmt::StoreMapped { .. } => "mapped store".into(),
            Stmt::If { results, .. } => {
                if !results.is_empty() {
                    names.insert("if with results".into());
                }
                "if".into()
            }
            Stmt::For { .. } => "for".into(),
            Stmt::Loop { .. } => "loop".into(),
            Stmt::Break { .. } => "break".into(),
            Stmt::Continue { .. } => "continue".into(),
            Stmt::Return => "return".into(),
            Stmt::Print { .. } => "print".into(),
            Stmt::Assert { .. } => "assert".into(),
            // Line information is not code: the generator makes none.
            Stmt::SourceLine { .. } => return,
        };
        names.insert(name);
    });
    for (_, t) in k.values.iter() {
        if let Some(e) = t.elem.known() {
            names.insert(format!("elem {e}"));
        }
    }
    for (p, a) in k.params.iter().zip(&case.args) {
        let (cuprum_tile_ir::ParamKind::Tensor(tp), ArgData::Tensor(t)) = (&p.kind, a) else {
            continue;
        };
        let row_major = crate::tensor::row_major(&t.shape);
        let output = tp.access == TensorAccess::Partitioned;
        if output {
            names.insert(format!("tile rank {}", tp.rank()));
            if let Some(tile) = tp.partition_tile() {
                let ragged = tile
                    .iter()
                    .zip(&t.shape)
                    .any(|(d, &n)| d.known().is_some_and(|d| n % u64::from(d) != 0));
                if ragged {
                    names.insert("ragged edge tile".into());
                }
            }
        }
        let significant = |i: usize| t.shape[i] > 1;
        let reordered = (0..t.shape.len()).any(|i| significant(i) && t.strides[i] != row_major[i]);
        if reordered {
            names.insert("view with padded or reordered strides".into());
            if output {
                names.insert("output view not contiguous".into());
            }
        } else if t.offset == 0 {
            names.insert("view contiguous".into());
        }
        if (0..t.shape.len()).any(|i| significant(i) && t.strides[i] < 0) {
            names.insert("view with a negative stride".into());
        }
        if (0..t.shape.len()).any(|i| significant(i) && t.strides[i] == 0) {
            names.insert("view with a zero stride".into());
        }
        if t.offset > 0 {
            names.insert("view at an offset".into());
        }
        if t.elements() == 0 {
            names.insert("tensor with no element".into());
        }
    }
    if case.options.num_warps.is_some() {
        names.insert("warps chosen".into());
    }
    if case.options.occupancy.is_some() {
        names.insert("occupancy chosen".into());
    }
    COVERED
        .iter()
        .copied()
        .chain(["const_param", "print"])
        .filter(|n| names.contains(*n))
        .collect()
}
