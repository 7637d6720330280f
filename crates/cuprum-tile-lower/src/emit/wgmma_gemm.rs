//! The Hopper recipe for tile kernels in the shape of a GEMM (cuTile Rust's `gemm`): a `for`
//! loop over K whose body loads a `[BM, BK]` tile of A at `(row, i)` and a `[BK, BN]` tile of
//! B at `(i, col)` and `mma`s them into an `f32` accumulator, which the kernel then stores
//! (converted, or as it is) as its own tile of the output.
//!
//! Such a kernel is emitted whole, in the warp-specialized shape of CUTLASS's Hopper GEMMs
//! (the SIMT track's `hopper_gemm` example is the same kernel written by hand):
//!
//! - warpgroup 0, the *producer*, gives registers back (`setmaxnreg`) and one of its threads
//!   streams `SK`-deep slices of A and B into a ring of shared stages with TMA (A K-major,
//!   B as the row-major `[K, N]` tensor it is, MN-major, 128-byte swizzled boxes of 64
//!   columns), each stage's bytes counted on its *full* mbarrier;
//! - the other `BM / 64` warpgroups, the *consumers*, each multiply their 64 rows of a stage
//!   into an `m64nBNk16` accumulator in registers (`wgmma`, B transposed), keep one group of
//!   MMAs in flight and release the previous stage on its *empty* mbarrier;
//! - the consumers convert their accumulators and store them: where a tensor map describes
//!   the output with rows of whole 16-byte chunks, through two swizzled shared buffers per
//!   consumer that one of its threads stores with TMA while the others go on
//!   ([`Emitter::staged_epilogue`]); otherwise from registers, predicated at the tensor's
//!   edges (pairs of columns as one store where the output's runs are aligned).
//!
//! The kernel is persistent ([`crate::BlockCount::Persistent`]): one block per
//! multiprocessor loops over the tiles (in a grouped order), the producer and the consumers
//! each walking the same sequence, the ring's stages and phases carried from one tile to the
//! next. So the producer fills the next tile's stages while the consumers store this one's
//! result, and no block pays a launch, an mbarrier set-up or an empty pipeline per tile.
//! With [`crate::LowerOptions::cluster_blocks`] 2 the blocks run in clusters of two that take
//! neighbouring rows of tiles and share B's boxes by TMA multicast
//! ([`GemmRecipe::cluster_blocks`]).
//!
//! **`tf32`.** `wgmma` reads `tf32` operands from shared memory only K-major, and B (a
//! row-major `[K, N]` tensor, as TMA copies it) is MN-major. So the consumers compute the
//! transposed product `Cᵀ = Bᵀ Aᵀ`: `wgmma`'s A is `Bᵀ`, read from the stage into registers
//! (two 8-byte loads per `m64k8` fragment: each thread's two fragment rows stand for two
//! neighbouring columns of C, spread so that no half-warp's loads meet in a bank), its B is
//! A's stage as it is (K-major); each consumer multiplies `m64` blocks of the tile's columns
//! by all `BM` rows, one or two consumers splitting the blocks. A stage's `wgmma`s are waited
//! for before the next stage's fragments reuse their registers, and the stage is released
//! at once. The epilogue stores the accumulator transposed back, column pairs of C still
//! one store. The products and their order in K are the same, so the sums are too.
//!
//! The sums are the tile IR's: each `wgmma` adds K's products (16, or 8 for `tf32`) to the
//! accumulator in increasing K, exactly as `Op::Mma` defines (the tile interpreter's
//! `mma`); TMA fills elements outside the tensors with zeros, which is the loads' padding,
//! so ragged edges agree bit for bit too. [`find`] says when a kernel qualifies: a device
//! of compute capability 9.0 (the code is sm_90a's), `f16`, `bf16` or `tf32` operands whose
//! tensors a tensor map can describe ([`crate::TensorFacts::tensor_map`]), `BM` 64 or 128,
//! `BN` a multiple of 64 up to 256 (`tf32`: at most 128 accumulator registers per
//! thread), `BK` a multiple of `wgmma`'s K, zero padding, a loop step of 1; anything else
//! takes the portable recipe of [`super::matmul`].

use cuprum_ir::wgmma::{Descriptor, ScaleD, WgmmaA, WgmmaMma, WgmmaShape, WgmmaType};
use cuprum_ir::{
    AddressSpace, BinaryOp, CmpOp, Constant, Dim, LaunchBounds, MbarrierOp, Op, ParamKind,
    ScalarType, Special, Stmt, Swizzle, TensorMapRef, TmaOp, Value, Var,
};
use cuprum_tile_ir::{
    Literal, Op as TOp, ParamKind as TParamKind, Stmt as TStmt, TensorAccess, TileKernel,
    TileValue, View, known_sizes,
};

use super::{Emitter, R};
use crate::{ArgSlot, LowerOptions};

/// Threads of a warpgroup.
const WARPGROUP: u32 = cuprum_ir::wgmma::WARPGROUP_THREADS;
/// Bytes of one row of a B box: one 128-byte swizzled row.
const B_BOX_ROW_BYTES: u32 = 128;
/// Columns of B (of `f16`/`bf16`) that the tile's N must be a multiple of: one box of
/// 16-bit elements, and one `m64` block of the `tf32` recipe's swapped product.
const N_MULTIPLE: u32 = 64;
/// Accumulator registers per consumer thread the `tf32` recipe allows (its `m64` blocks
/// times `BM / 2`), as the 16-bit recipe's widest tile (`BN = 256`) has.
const MAX_ACCUMULATORS: u32 = 128;
/// The most shared memory the ring may take (of the H100/H200's 227 KiB per block).
const RING_BUDGET: u32 = 200 * 1024;
/// The most the ring and the staged epilogue's buffers take together (with the mbarriers
/// and the dynamic region's alignment, within the 227 KiB a block may have).
const STAGED_BUDGET: u32 = 224 * 1024;
/// Rows of a staged epilogue's chunk (a consumer's rows) and its bytes per row (one
/// 128-byte swizzled row: 64 columns of 16 bits, 32 of `f32`).
const CHUNK_ROWS: u32 = 64;
const CHUNK_ROW_BYTES: u32 = 128;
/// Chunk buffers per consumer: one written while the previous one is stored.
const CHUNK_BUFFERS: u32 = 2;
/// Rows of tiles a group of consecutive tile blocks covers (see `grouped_index`).
const GROUP_ROWS: u32 = 8;
/// The most stages of the ring.
const MAX_STAGES: u32 = 8;
/// Registers per thread of the producer warpgroup, and of the consumers, with two consumer
/// warpgroups: `128 * 40 + 256 * 232 = 384 * 168`, the kernel's cap.
const PRODUCER_REGISTERS: u32 = 40;
const CONSUMER_REGISTERS: u32 = 232;
const REGISTER_CAP: u32 = 168;

/// How the accumulator starts.
#[derive(Clone, Copy, Debug)]
enum AccInit {
    /// Every element this constant (`f32`).
    Const(f32),
    /// The output's own tile (an `f32` output), elements outside it `padding`.
    Own { padding: f32 },
}

/// A kernel the recipe takes, and the recipe's choices for it (see [`find`]).
#[derive(Clone, Debug)]
pub(crate) struct GemmRecipe {
    /// Statements before the loop (rank-0 values and the accumulator's start), by position.
    prologue: usize,
    /// The accumulator's starting value's definition, which the recipe emits itself.
    acc_value: TileValue,
    acc_init: AccInit,
    /// The loop's bounds (rank-0 integers).
    start: TileValue,
    end: TileValue,
    /// A (`[M, K]`) and the row of tiles the loop reads.
    a: u32,
    a_row: TileValue,
    /// B (`[K, N]`) and the column of tiles the loop reads.
    b: u32,
    b_col: TileValue,
    ty: WgmmaType,
    /// The output and its element type.
    out: u32,
    out_elem: ScalarType,
    bm: u32,
    bn: u32,
    bk: u32,
    /// K per stage of the ring.
    sk: u32,
    stages: u32,
    /// Blocks per cluster along `x` (1 or 2; see [`GemmRecipe::cluster_blocks`]).
    cluster: u32,
    /// Whether the consumers store their tiles through shared memory with TMA (see
    /// [`Emitter::staged_epilogue`]): 16-bit operands (the accumulator's own layout) and an
    /// `f32`, `f16` or `bf16` output that a tensor map can describe, with rows of whole
    /// 16-byte chunks (a tile store writes a row's last chunk whole).
    staged: bool,
}

impl GemmRecipe {
    /// Blocks per cluster: with 2, the blocks of a cluster take vertically neighbouring
    /// tiles (the same columns of B) and each copies half of every stage's B boxes into
    /// both blocks' shared memory (TMA multicast), so B is read from L2 once per pair.
    pub(crate) fn cluster_blocks(&self) -> u32 {
        self.cluster
    }

    /// Arrivals that release a stage ([`Emitter::release_stage`]): every consumer thread,
    /// or in a cluster one lane of every consumer warp of every block of the cluster.
    fn releases_per_stage(&self) -> u32 {
        if self.cluster == 1 {
            WARPGROUP * self.consumers()
        } else {
            WARPGROUP / 32 * self.consumers() * self.cluster
        }
    }

    /// Columns of the output in one staged chunk.
    fn chunk_columns(&self) -> u32 {
        CHUNK_ROW_BYTES / self.out_elem.size_bytes()
    }

    /// Bytes of the staged epilogue's buffers (none without it).
    fn staging_bytes(&self) -> u32 {
        if self.staged {
            self.consumers() * CHUNK_BUFFERS * CHUNK_ROWS * CHUNK_ROW_BYTES
        } else {
            0
        }
    }

    /// Threads per block: the producer warpgroup and the consumer warpgroups.
    pub(crate) fn threads(&self) -> u32 {
        WARPGROUP * (1 + self.consumers())
    }

    /// Whether the consumers compute `Cᵀ = Bᵀ Aᵀ` (`tf32`; see the module docs).
    fn swapped(&self) -> bool {
        self.ty == WgmmaType::Tf32
    }

    /// Consumer warpgroups: one per 64 rows of the tile; for `tf32`, two when the tile's
    /// `m64` blocks of columns split evenly, else one.
    fn consumers(&self) -> u32 {
        if !self.swapped() {
            self.bm / 64
        } else if (self.bn / N_MULTIPLE).is_multiple_of(2) {
            2
        } else {
            1
        }
    }

    /// `tf32`: the `m64` blocks of the tile's columns each consumer multiplies.
    fn blocks(&self) -> u32 {
        self.bn / N_MULTIPLE / self.consumers()
    }

    /// Accumulator registers per consumer thread.
    fn accumulators(&self) -> u32 {
        if self.swapped() {
            self.blocks() * self.bm / 2
        } else {
            self.bn / 2
        }
    }

    /// Bytes of an element of A and B.
    fn elem_bytes(&self) -> u32 {
        self.ty.bytes()
    }

    /// Columns of B in one TMA box (one 128-byte row).
    fn b_box_columns(&self) -> u32 {
        B_BOX_ROW_BYTES / self.elem_bytes()
    }

    fn a_bytes(&self) -> u32 {
        self.bm * self.sk * self.elem_bytes()
    }

    fn b_box_bytes(&self) -> u32 {
        self.sk * B_BOX_ROW_BYTES
    }

    fn stage_bytes(&self) -> u32 {
        self.a_bytes() + self.bn * self.sk * self.elem_bytes()
    }

    /// A's swizzle: one row of a stage is `SK` elements.
    fn a_swizzle(&self) -> Swizzle {
        match self.sk * self.elem_bytes() {
            32 => Swizzle::B32,
            64 => Swizzle::B64,
            _ => Swizzle::B128,
        }
    }

    /// Where accumulator register `i` of a consumer thread is in the output, relative to
    /// the thread's place (`Emitter::own_place`): `(rows, columns)`. The 16-bit recipe's
    /// registers are `wgmma`'s accumulator layout (`accumulator_position`) as they are;
    /// the swapped recipe's are its blocks' transposed, each fragment row `r` (a column of
    /// C) at the thread's column pair (`tf32_pair`) plus `r >= 8`.
    fn acc_offset(&self, i: u32) -> (u32, u32) {
        if self.swapped() {
            let (block, reg) = (i / (self.bm / 2), i % (self.bm / 2));
            (8 * (reg / 4) + reg % 2, N_MULTIPLE * block + (reg / 2) % 2)
        } else {
            (8 * ((i / 2) % 2), 8 * (i / 4) + i % 2)
        }
    }

    /// The register whose element is in the same row as register `i`'s and in the next
    /// column, when `i` is the first of such a pair.
    fn pair_of(&self, i: u32) -> Option<u32> {
        let next = if self.swapped() { i + 2 } else { i + 1 };
        let (r, c) = self.acc_offset(i);
        (next < self.accumulators() && self.acc_offset(next) == (r, c + 1)).then_some(next)
    }
}

/// The recipe for `kernel`, if it has a GEMM's shape and `options` allow (see the module
/// docs).
pub(crate) fn find(kernel: &TileKernel, options: &LowerOptions) -> Option<GemmRecipe> {
    // wgmma and setmaxnreg are sm_90a's: compute capability 9.0 exactly.
    if options.compute_capability? != (9, 0) || options.num_warps.is_some() {
        return None;
    }
    let stmts = &kernel.body.stmts;
    let at = stmts.iter().position(|s| matches!(s, TStmt::For { .. }))?;
    let TStmt::For {
        counter,
        start,
        end,
        step,
        args,
        inits,
        body,
        results,
    } = &stmts[at]
    else {
        return None;
    };
    let ([arg], [init], [result]) = (args.as_slice(), inits.as_slice(), results.as_slice()) else {
        return None;
    };
    let def_of = |v: TileValue| {
        stmts[..at].iter().find_map(|s| match s {
            TStmt::Def { value, op } if *value == v => Some(op),
            _ => None,
        })
    };
    let rank0 = |v: TileValue| known_sizes(&kernel.values[v].shape).is_some_and(|s| s.is_empty());
    // Before the loop: rank-0 values, and the accumulator's start (and line information,
    // which the prologue emits; it is looked past everywhere here).
    for s in &stmts[..at] {
        match s {
            TStmt::Def { value, .. } if rank0(*value) || value == init => {}
            TStmt::SourceLine { .. } => {}
            _ => return None,
        }
    }
    let counter_ty = kernel.values[*counter].elem.known()?;
    if !matches!(def_of(*step)?, TOp::Const { value, .. } if literal_bits(*value, counter_ty) == Some(1))
    {
        return None;
    }
    // The body: two loads and the mma, yielded.
    let code: Vec<&TStmt> = body.stmts.iter().filter(|s| !s.is_source_line()).collect();
    let [s0, s1, s2] = code.as_slice() else {
        return None;
    };
    let TStmt::Def {
        value: product,
        op: TOp::Mma { a, b, acc },
    } = s2
    else {
        return None;
    };
    if acc != arg || body.yields.as_slice() != [*product] {
        return None;
    }
    let load = |s: &TStmt, v: TileValue| match s {
        TStmt::Def {
            value,
            op:
                TOp::Load {
                    view:
                        View::Tiled {
                            tensor,
                            tile,
                            index,
                        },
                    padding,
                },
        } if *value == v
            && literal_bits(*padding, kernel.values[v].elem.known()?) == Some(0)
            && index.len() == 2 =>
        {
            let tile = known_sizes(tile)?;
            Some((*tensor, tile, index[0], index[1]))
        }
        _ => None,
    };
    let (a_load, b_load) = (
        load(s0, *a).or_else(|| load(s1, *a))?,
        load(s0, *b).or_else(|| load(s1, *b))?,
    );
    let (ta, a_tile, a_row, a_k) = a_load;
    let (tb, b_tile, b_k, b_col) = b_load;
    if a_k != *counter || b_k != *counter || a_row == *counter || b_col == *counter {
        return None;
    }
    let [bm, bk] = a_tile.as_slice() else {
        return None;
    };
    let [bk2, bn] = b_tile.as_slice() else {
        return None;
    };
    let (bm, bk, bn) = (*bm, *bk, *bn);
    // The operands: read-only rank-2 tensors of one 16-bit type or tf32, tensor maps
    // possible.
    let elem = kernel.values[*a].elem.known()?;
    if kernel.values[*b].elem.known()? != elem
        || kernel.values[*acc].elem.known()? != ScalarType::F32
    {
        return None;
    }
    let ty = match elem {
        ScalarType::F16 => WgmmaType::F16,
        ScalarType::BF16 => WgmmaType::Bf16,
        ScalarType::Tf32 => WgmmaType::Tf32,
        _ => return None,
    };
    if bk != *bk2
        || !(bm == 64 || bm == 128)
        || bn == 0
        || !bn.is_multiple_of(N_MULTIPLE)
        || bn > 256
        || bk == 0
        || !bk.is_multiple_of(ty.k())
    {
        return None;
    }
    for t in [ta, tb] {
        let TParamKind::Tensor(p) = &kernel.params.get(t as usize)?.kind else {
            return None;
        };
        let mapped = options
            .tensor_facts
            .get(t as usize)
            .is_some_and(|f| f.tensor_map);
        if p.access != TensorAccess::Read || p.rank() != 2 || !mapped {
            return None;
        }
    }
    // After the loop: an optional conversion, the store of the own tile, nothing else.
    let mut rest = stmts[at + 1..].iter().filter(|s| !s.is_source_line());
    let mut stored = *result;
    let mut next = rest.next()?;
    if let TStmt::Def {
        value,
        op: TOp::Cast { value: from, .. },
    } = next
        && from == result
    {
        stored = *value;
        next = rest.next()?;
    }
    let TStmt::Store { tensor: out, value } = next else {
        return None;
    };
    if *value != stored || !rest.all(|s| matches!(s, TStmt::Return)) {
        return None;
    }
    let TParamKind::Tensor(o) = &kernel.params.get(*out as usize)?.kind else {
        return None;
    };
    let out_elem = kernel.values[stored].elem.known()?;
    if o.access != TensorAccess::Partitioned
        || o.rank() != 2
        || known_sizes(&kernel.values[stored].shape)? != [bm, bn]
        || !matches!(
            out_elem,
            ScalarType::F32 | ScalarType::F16 | ScalarType::BF16 | ScalarType::Tf32
        )
    {
        return None;
    }
    // The accumulator starts as a constant, or as the (f32) output's own tile.
    let acc_init = match def_of(*init)? {
        TOp::Const { value, .. } => AccInit::Const(literal_f32(*value)?),
        TOp::Load {
            view: View::Own { tensor },
            padding,
        } if tensor == out && out_elem == ScalarType::F32 && stored == *result => AccInit::Own {
            padding: literal_f32(*padding)?,
        },
        _ => return None,
    };
    // K per stage: rows of at most 128 bytes (one swizzled row of A), whole `wgmma`s.
    let sk = [4, 2, 1]
        .into_iter()
        .map(|n| n * 32 / ty.bytes())
        .find(|s| bk.is_multiple_of(*s) && s.is_multiple_of(ty.k()))?;
    let mut recipe = GemmRecipe {
        prologue: at,
        acc_value: *init,
        acc_init,
        start: *start,
        end: *end,
        a: ta,
        a_row,
        b: tb,
        b_col,
        ty,
        out: *out,
        out_elem,
        bm,
        bn,
        bk,
        sk,
        stages: 0,
        cluster: 1,
        staged: false,
    };
    // A tile store writes each row's last 16-byte chunk whole (`stored_row_elems`): only
    // where the rows are whole chunks does it write nothing past the tensor's columns.
    let out_mapped = options.tensor_facts.get(*out as usize).is_some_and(|f| {
        f.tensor_map
            && f.size_divisors.get(1).is_some_and(|&d| {
                (d * u64::from(out_elem.size_bytes()))
                    .is_multiple_of(u64::from(cuprum_ir::tma::BOX_START_ALIGN))
            })
    });
    recipe.staged = !recipe.swapped()
        && out_mapped
        && matches!(
            out_elem,
            ScalarType::F32 | ScalarType::F16 | ScalarType::BF16
        );
    let budget = if recipe.staged {
        STAGED_BUDGET - recipe.staging_bytes()
    } else {
        RING_BUDGET
    };
    recipe.stages = (budget / recipe.stage_bytes()).min(MAX_STAGES);
    // Pairs of blocks sharing B: 16-bit operands (the swapped `tf32` product reads B
    // through registers), B's boxes split evenly between the two, and the same K loop for
    // every tile (the pair's rings advance together), so no value before the loop may
    // depend on the tile block.
    let mut per_block: Vec<TileValue> = Vec::new();
    for s in &stmts[..at] {
        if let TStmt::Def { value, op } = s
            && (matches!(op, TOp::BlockId(_) | TOp::NumBlocks(_))
                || op.operands().iter().any(|v| per_block.contains(v)))
        {
            per_block.push(*value);
        }
    }
    let per_tile = per_block.contains(start) || per_block.contains(end);
    let pairs =
        !recipe.swapped() && (recipe.bn / recipe.b_box_columns()).is_multiple_of(2) && !per_tile;
    // Only when asked: on an H100 pairs ran no faster at 4096^3 and were mixed at 8192^3.
    recipe.cluster = match options.cluster_blocks {
        Some(2) if pairs => 2,
        _ => 1,
    };
    (recipe.stages >= 2 && recipe.accumulators() <= MAX_ACCUMULATORS).then_some(recipe)
}

/// The bits of `literal` as an element of type `ty` (0 is a positive zero).
fn literal_bits(literal: Literal, ty: ScalarType) -> Option<u64> {
    literal.to_constant(ty).map(|c| c.bits)
}

/// `literal` as an `f32`, as the tile IR converts it to the accumulator's type.
fn literal_f32(literal: Literal) -> Option<f32> {
    literal_bits(literal, ScalarType::F32).map(|b| f32::from_bits(b as u32))
}

impl Emitter<'_> {
    /// Emits the whole kernel by the recipe (see the module docs).
    pub(crate) fn run_gemm_recipe(
        mut self,
        r: &GemmRecipe,
    ) -> R<(cuprum_ir::Kernel, u32, Vec<ArgSlot>)> {
        let threads = r.threads();
        self.b.set_block(Some((threads, 1, 1)));
        self.b.set_launch_bounds(Some(LaunchBounds {
            max_threads: threads,
            min_blocks_per_sm: Some(1),
        }));
        let two_consumers = r.consumers() == 2;
        if two_consumers {
            self.b.set_max_registers(Some(REGISTER_CAP));
        }
        let clustered = r.cluster > 1;
        if clustered {
            self.b.set_cluster(Some((r.cluster, 1, 1)));
        }
        self.b.align_dyn_shared(1024);
        let a_map = self.tensor_map_param(r.a, [r.sk, r.bm], r.a_swizzle())?;
        let b_map = self.tensor_map_param(r.b, [r.b_box_columns(), r.sk], Swizzle::B128)?;
        let out_map = if r.staged {
            let box_dims = [r.chunk_columns(), CHUNK_ROWS];
            Some(self.tensor_map_param(r.out, box_dims, Swizzle::B128)?)
        } else {
            None
        };
        let tiles = self.tile_grid(r)?;

        // Shared memory: the ring's stages, the staged epilogue's buffers, the mbarriers.
        let staging = r.stages * r.stage_bytes();
        let bars = staging + r.staging_bytes();
        self.shared_bytes = bars + 16 * r.stages;
        let tid = self.tid;
        let zero32 = self.u32c(0);
        let first = self.cmp(CmpOp::Eq, tid, zero32)?;
        self.if_(first, |e| {
            for s in 0..r.stages {
                let full = e.barrier_addr(bars, s)?;
                let one = e.u32c(1);
                e.mbarrier(MbarrierOp::Init, full, Some(one))?;
                let empty = e.barrier_addr(bars, r.stages + s)?;
                let n = e.u32c(r.releases_per_stage());
                e.mbarrier(MbarrierOp::Init, empty, Some(n))?;
            }
            e.push(Stmt::FenceProxyAsync {
                space: cuprum_ir::ProxyFenceSpace::SharedCta,
            });
            if clustered {
                e.push(Stmt::FenceMbarrierInit);
            }
            Ok(())
        })?;
        // The barriers are set up before any block of the cluster uses them.
        self.cluster_barrier(clustered);
        let wg_size = self.u32c(WARPGROUP);
        let warpgroup = self.bin(BinaryOp::Div, tid, wg_size)?;
        let producer = self.cmp(CmpOp::Eq, warpgroup, zero32)?;
        self.if_else(
            producer,
            |e| {
                if two_consumers {
                    e.push(Stmt::SetMaxNreg {
                        increase: false,
                        count: PRODUCER_REGISTERS,
                    });
                }
                e.if_(first, |e| {
                    let ring = e.ring_position();
                    e.for_each_tile(r, tiles, |e| {
                        let (start, total) = e.tile_prologue(r)?;
                        e.produce(r, [a_map, b_map], start, total, bars, &ring)
                    })
                })
            },
            |e| {
                if two_consumers {
                    e.push(Stmt::SetMaxNreg {
                        increase: true,
                        count: CONSUMER_REGISTERS,
                    });
                }
                let one = e.u32c(1);
                let w = e.bin(BinaryOp::Sub, warpgroup, one)?;
                let wt = e.bin(BinaryOp::Rem, tid, wg_size)?;
                let acc: Vec<Var> = (0..r.accumulators())
                    .map(|_| e.var(ScalarType::F32))
                    .collect();
                let ring = e.ring_position();
                let fragments = if r.swapped() {
                    Some(e.tf32_fragment_offsets(r, w, wt)?)
                } else {
                    None
                };
                e.for_each_tile(r, tiles, |e| {
                    let (_, total) = e.tile_prologue(r)?;
                    let consumer = Consumer {
                        w,
                        wt,
                        total,
                        bars,
                        fragments,
                        staging: out_map.map(|map| (map, staging)),
                    };
                    e.consume(r, &consumer, &ring, &acc)
                })?;
                if r.staged {
                    // The last tiles' stores complete before the block leaves.
                    let zero = e.u32c(0);
                    let issuer = e.cmp(CmpOp::Eq, wt, zero)?;
                    e.if_(issuer, |e| {
                        e.push(Stmt::Tma(TmaOp::WaitGroup {
                            pending: 0,
                            read: false,
                        }));
                        Ok(())
                    })?;
                }
                Ok(())
            },
        )?;
        if clustered {
            // No block leaves while the other may still copy into its shared memory or
            // release its stages.
            self.cluster_barrier(true);
        }
        Ok((self.b.finish(), self.shared_bytes, self.args))
    }

    /// A barrier of the whole cluster (`clustered`: arrive and wait), else of the block.
    fn cluster_barrier(&mut self, clustered: bool) {
        if clustered {
            self.push(Stmt::ClusterArrive);
            self.push(Stmt::ClusterWait);
        } else {
            self.push(Stmt::Barrier);
        }
    }

    /// The tile grid of the launch (`U32`): `ceil(size / tile)` blocks along each axis of the
    /// output, `cuprum_tile_ir::grid_of`'s rule (the output is the kernel's partitioned
    /// tensor, so it gives the grid, whose axes hold `u32`s).
    fn tile_grid(&mut self, r: &GemmRecipe) -> R<[Value; 2]> {
        let dims = self.tensor(r.out)?.dims.clone();
        let mut grid = [dims[0]; 2];
        for (g, (&d, tile)) in grid.iter_mut().zip(dims.iter().zip([r.bm, r.bn])) {
            let last = self.i64c(i64::from(tile) - 1);
            let up = self.add(d, last)?;
            // Unsigned (sizes are not negative), so the optimizer makes the division by a
            // power of two a shift: ptxas divides by a constant as by any number, and a
            // 64-bit division is a subroutine.
            let up = self.cast(up, ScalarType::U64)?;
            let tile = self.konst(Constant::u64(u64::from(tile)));
            let blocks = self.bin(BinaryOp::Div, up, tile)?;
            *g = self.cast(blocks, ScalarType::U32)?;
        }
        Ok(grid)
    }

    /// The persistent loop: this block runs tile blocks `ctaid.x, ctaid.x + nctaid.x, ..`
    /// of the `tiles` grid (linear, in launch order), each dealt by
    /// [`grouped_index`](Self::grouped_index) and run by `body` with the tile block's index
    /// and the grid as the tile IR's `BlockId` and `NumBlocks` see them. In `U32`
    /// arithmetic (no 64-bit divisions, which are long in SASS and slow to compile): a
    /// persistent launch has at most `i32::MAX` tile blocks ([`crate::BlockCount::grid`]), so
    /// neither the count nor a block's next index wraps.
    ///
    /// In clusters of two ([`GemmRecipe::cluster_blocks`]) the loop runs over pairs of tile
    /// rows instead: cluster `clusterid.x` takes pairs `clusterid.x, clusterid.x +
    /// nclusterid.x, ..` of the `ceil(rows / 2) x cols` grid of pairs (in the grouped
    /// order), and its block of rank `r` the pair's row `2 row + r`, so both blocks read the
    /// same columns of B. Past the last row (an odd number of rows), a block computes a tile
    /// of zeros (TMA fills A's rows beyond the tensor) that it does not store (its stores
    /// are predicated at the tensor's edges), so that its pair's rings still advance.
    fn for_each_tile(
        &mut self,
        r: &GemmRecipe,
        tiles: [Value; 2],
        body: impl FnOnce(&mut Self) -> R<()>,
    ) -> R<()> {
        let [rows, cols] = tiles;
        if r.cluster == 1 {
            let count = self.mul(rows, cols)?;
            let x = self.def(Op::Special(Special::BlockIdx(Dim::X)))?;
            let blocks = self.def(Op::Special(Special::GridDim(Dim::X)))?;
            return self.counted_loop(x, count, blocks, |e, t| {
                e.block_index = Some(e.grouped_index(t, rows, cols)?);
                e.grid_dims = Some([rows, cols]);
                body(e)
            });
        }
        let cluster = self.u32c(r.cluster);
        let last = self.u32c(r.cluster - 1);
        let up = self.add(rows, last)?;
        let pair_rows = self.bin(BinaryOp::Div, up, cluster)?;
        let count = self.mul(pair_rows, cols)?;
        let x = self.def(Op::Special(Special::ClusterIdx(Dim::X)))?;
        let clusters = self.def(Op::Special(Special::ClusterCount(Dim::X)))?;
        let rank = self.def(Op::Special(Special::ClusterCtaRank))?;
        self.counted_loop(x, count, clusters, |e, t| {
            let [pair_row, col] = e.grouped_index(t, pair_rows, cols)?;
            let first = e.mul(pair_row, cluster)?;
            let row = e.add(first, rank)?;
            e.block_index = Some([row, col]);
            e.grid_dims = Some([rows, cols]);
            body(e)
        })
    }

    /// The statements before the K loop (rank-0 values), for the tile block at hand, and the
    /// loop's start step and count of ring sub-stages (`I64`).
    fn tile_prologue(&mut self, r: &GemmRecipe) -> R<(Value, Value)> {
        for s in &self.kernel.body.stmts[..r.prologue] {
            if !matches!(s, TStmt::Def { value, .. } if *value == r.acc_value) {
                self.stmt(s)?;
            }
        }
        // The loop's sub-stages: SK-deep slices of each BK step.
        let start = self.uniform(r.start)?;
        let end = self.uniform(r.end)?;
        let (start, end) = (
            self.cast(start, ScalarType::I64)?,
            self.cast(end, ScalarType::I64)?,
        );
        let steps = self.bin(BinaryOp::Sub, end, start)?;
        let zero = self.i64c(0);
        let steps = self.bin(BinaryOp::Max, steps, zero)?;
        let per_step = self.i64c(i64::from(r.bk / r.sk));
        let total = self.mul(steps, per_step)?;
        Ok((start, total))
    }

    /// Tile block `(row, col)` (`U32`) of linear index `linear < rows * cols` in a
    /// `rows x cols` grid: taking them in order, [`GROUP_ROWS`] rows of tiles at a time,
    /// column by column (Triton's grouped order), lets the blocks running at once share rows
    /// of A and columns of B in L2 rather than each wave sweeping all of A. A bijection of
    /// the grid, so each tile is still one block's. (The group is `linear / cols /
    /// GROUP_ROWS`, which equals `linear / (cols * GROUP_ROWS)` without forming that
    /// product, which may not fit.)
    fn grouped_index(&mut self, linear: Value, rows: Value, cols: Value) -> R<[Value; 2]> {
        let group = self.u32c(GROUP_ROWS);
        let row_of_tiles = self.bin(BinaryOp::Div, linear, cols)?;
        let g = self.bin(BinaryOp::Div, row_of_tiles, group)?;
        let first = self.mul(g, group)?;
        let before = self.mul(first, cols)?;
        let within = self.bin(BinaryOp::Sub, linear, before)?;
        let left = self.bin(BinaryOp::Sub, rows, first)?;
        let height = self.bin(BinaryOp::Min, left, group)?;
        let down = self.bin(BinaryOp::Rem, within, height)?;
        let row = self.add(first, down)?;
        let col = self.bin(BinaryOp::Div, within, height)?;
        Ok([row, col])
    }

    /// A tensor-map parameter of tile tensor parameter `param`, of the tensor's rank, whose
    /// boxes are `box_dims` along its two innermost axes (innermost first) and one along
    /// any other, under `swizzle` ([`crate::ArgSlot::TensorMap`]); returns its kernel IR
    /// parameter index. Each call makes a parameter of its own (a tensor may have several).
    pub(super) fn tensor_map_param(
        &mut self,
        param: u32,
        box_dims: [u32; 2],
        swizzle: Swizzle,
    ) -> R<u32> {
        let p = &self.kernel.params[param as usize];
        let (elem, rank) = match &p.kind {
            TParamKind::Tensor(t) => (t.elem.known(), u8::try_from(t.rank()).ok()),
            TParamKind::Scalar(_) => (None, None),
        };
        let (Some(elem), Some(rank)) = (elem, rank) else {
            return Err(self.internal("a tensor map of a parameter that is not a typed tensor"));
        };
        let name = format!("{}_map{}", p.name, self.args.len());
        let index = self.b.param(name, ParamKind::TensorMap { elem, rank });
        self.args.push(ArgSlot::TensorMap {
            param,
            box_dims,
            swizzle,
        });
        Ok(index)
    }

    /// The `U32` shared address of mbarrier `i` of the ring's (full ones, then empty ones),
    /// which start at byte `bars`.
    fn barrier_addr(&mut self, bars: u32, i: u32) -> R<Value> {
        let off = self.u32c(bars + 8 * i);
        self.add(self.shared_base, off)
    }

    pub(super) fn mbarrier(&mut self, op: MbarrierOp, addr: Value, arg: Option<Value>) -> R<()> {
        let r = self.b.mbarrier(op, addr, arg);
        self.built(r).map(drop)
    }

    /// The `U32` shared address of byte `offset` of stage `stage` (a `U32` value).
    fn stage_addr(&mut self, r: &GemmRecipe, stage: Value, offset: Value) -> R<Value> {
        let bytes = self.u32c(r.stage_bytes());
        let at = self.mul(stage, bytes)?;
        let at = self.add(self.shared_base, at)?;
        self.add(at, offset)
    }

    /// The ring's position, carried over the tiles a thread runs: how many sub-stages it has
    /// gone through (`I64`), the stage the next one uses and that stage's fill parity
    /// (`U32`), all starting at 0.
    fn ring_position(&mut self) -> RingPosition {
        let pos = RingPosition {
            count: self.var(ScalarType::I64),
            stage: self.var(ScalarType::U32),
            phase: self.var(ScalarType::U32),
        };
        let zero = self.i64c(0);
        self.write(pos.count, zero);
        let zero32 = self.u32c(0);
        self.write(pos.stage, zero32);
        self.write(pos.phase, zero32);
        pos
    }

    /// A loop over one tile's ring sub-stages `0..total`: `body(e, j, count, stage, phase)`
    /// with the sub-stage `j` (`I64`) and the ring's position before it (see
    /// [`ring_position`](Self::ring_position)), which the loop advances.
    fn ring_loop(
        &mut self,
        r: &GemmRecipe,
        total: Value,
        pos: &RingPosition,
        body: impl FnOnce(&mut Self, Value, Value, Value, Value) -> R<()>,
    ) -> R<()> {
        let (zero, one) = (self.i64c(0), self.i64c(1));
        self.counted_loop(zero, total, one, |e, j| {
            let (n, s, p) = (e.read(pos.count)?, e.read(pos.stage)?, e.read(pos.phase)?);
            body(e, j, n, s, p)?;
            let one = e.i64c(1);
            let next = e.add(n, one)?;
            e.write(pos.count, next);
            let one = e.u32c(1);
            let s1 = e.add(s, one)?;
            let last = e.u32c(r.stages);
            let wrap = e.cmp(CmpOp::Eq, s1, last)?;
            let zero32 = e.u32c(0);
            let s2 = e.select(wrap, zero32, s1)?;
            e.write(pos.stage, s2);
            let flipped = e.bin(BinaryOp::Xor, p, one)?;
            let p2 = e.select(wrap, flipped, p)?;
            e.write(pos.phase, p2);
            Ok(())
        })
    }

    /// The ring stage before `stage` (`U32`).
    fn previous_stage(&mut self, r: &GemmRecipe, stage: Value) -> R<Value> {
        let stages = self.u32c(r.stages);
        let one = self.u32c(1);
        let back = self.add(stage, stages)?;
        let back = self.bin(BinaryOp::Sub, back, one)?;
        self.bin(BinaryOp::Rem, back, stages)
    }

    /// The producer's thread: each sub-stage waits for its stage to be released, announces
    /// the stage's bytes and copies A's and B's boxes into it.
    fn produce(
        &mut self,
        r: &GemmRecipe,
        [a_map, b_map]: [u32; 2],
        start: Value,
        total: Value,
        bars: u32,
        ring: &RingPosition,
    ) -> R<()> {
        let a_row = self.uniform(r.a_row)?;
        let a_row = self.cast(a_row, ScalarType::I32)?;
        let bm = self.konst(Constant::i32(r.bm as i32));
        let m0 = self.mul(a_row, bm)?;
        let b_col = self.uniform(r.b_col)?;
        let b_col = self.cast(b_col, ScalarType::I32)?;
        let bn = self.konst(Constant::i32(r.bn as i32));
        let n0 = self.mul(b_col, bn)?;
        self.ring_loop(r, total, ring, |e, u, filled, stage, phase| {
            // A stage filled before (by this tile or an earlier one) waits for its release.
            let stages = e.i64c(i64::from(r.stages));
            let refill = e.cmp(CmpOp::Ge, filled, stages)?;
            e.if_(refill, |e| {
                let empty = e.barrier_addr_at(bars, r.stages, stage)?;
                let one = e.u32c(1);
                let parity = e.bin(BinaryOp::Xor, phase, one)?;
                e.mbarrier(MbarrierOp::WaitParity, empty, Some(parity))
            })?;
            let full = e.barrier_addr_at(bars, 0, stage)?;
            let bytes = e.u32c(r.stage_bytes());
            e.mbarrier(MbarrierOp::ArriveExpectTx, full, Some(bytes))?;
            // K of this sub-stage: (start + u / per_step) * BK + (u % per_step) * SK, which
            // is start * BK + u * SK (BK = per_step * SK), without a division.
            let bk = e.i64c(i64::from(r.bk));
            let k0 = e.mul(start, bk)?;
            let sk = e.i64c(i64::from(r.sk));
            let k1 = e.mul(u, sk)?;
            let k = e.add(k0, k1)?;
            let k = e.cast(k, ScalarType::I32)?;
            let zero = e.u32c(0);
            let dst = e.stage_addr(r, stage, zero)?;
            e.push(Stmt::Tma(TmaOp::LoadTile {
                map: TensorMapRef::Param(a_map),
                coords: vec![k, m0],
                dst,
                mbar: full,
                multicast: None,
            }));
            let boxes = r.bn / r.b_box_columns();
            if r.cluster == 1 {
                for j in 0..boxes {
                    let j = e.u32c(j);
                    e.copy_b_box(r, b_map, stage, [n0, k], j, full, None)?;
                }
                return Ok(());
            }
            // This block's share of B's boxes, into both blocks' stage.
            let share = boxes / r.cluster;
            let rank = e.def(Op::Special(Special::ClusterCtaRank))?;
            let per_rank = e.u32c(share);
            let mine = e.mul(rank, per_rank)?;
            let everyone = e.konst(Constant {
                ty: ScalarType::U16,
                bits: (1 << r.cluster) - 1,
            });
            for i in 0..share {
                let i = e.u32c(i);
                let j = e.add(mine, i)?;
                e.copy_b_box(r, b_map, stage, [n0, k], j, full, Some(everyone))?;
            }
            Ok(())
        })
    }

    /// Copies box `j` (`U32`) of B's `[SK, BN]` slice at `(k, n0)` into stage `stage`,
    /// counting its bytes on the mbarrier `full`; `multicast`: into the stage of every
    /// block of the mask (`U16`) instead.
    #[allow(clippy::too_many_arguments)]
    fn copy_b_box(
        &mut self,
        r: &GemmRecipe,
        b_map: u32,
        stage: Value,
        [n0, k]: [Value; 2],
        j: Value,
        full: Value,
        multicast: Option<Value>,
    ) -> R<()> {
        let box_bytes = self.u32c(r.b_box_bytes());
        let off = self.mul(j, box_bytes)?;
        let a_bytes = self.u32c(r.a_bytes());
        let off = self.add(a_bytes, off)?;
        let dst = self.stage_addr(r, stage, off)?;
        let j = self.cast(j, ScalarType::I32)?;
        let columns = self.konst(Constant::i32(r.b_box_columns() as i32));
        let col = self.mul(j, columns)?;
        let n = self.add(n0, col)?;
        self.push(Stmt::Tma(TmaOp::LoadTile {
            map: TensorMapRef::Param(b_map),
            coords: vec![n, k],
            dst,
            mbar: full,
            multicast,
        }));
        Ok(())
    }

    /// The address of barrier `first + stage` (`stage` a `U32` value).
    fn barrier_addr_at(&mut self, bars: u32, first: u32, stage: Value) -> R<Value> {
        let base = self.barrier_addr(bars, first)?;
        let eight = self.u32c(8);
        let off = self.mul(stage, eight)?;
        self.add(base, off)
    }

    /// A 64-bit shared-memory matrix descriptor of the operand at `addr` (`U32`).
    pub(super) fn descriptor(
        &mut self,
        addr: Value,
        lbo: u32,
        sbo: u32,
        swizzle: Swizzle,
    ) -> R<Value> {
        let fixed = Descriptor {
            start: 0,
            leading_byte_offset: lbo,
            stride_byte_offset: sbo,
            base_offset: 0,
            swizzle,
        }
        .encode();
        let four = self.u32c(4);
        let start = self.bin(BinaryOp::Shr, addr, four)?;
        let mask = self.u32c(0x3FFF);
        let start = self.bin(BinaryOp::And, start, mask)?;
        let start = self.cast(start, ScalarType::U64)?;
        let fixed = self.konst(Constant::u64(fixed));
        self.bin(BinaryOp::Or, start, fixed)
    }

    /// A consumer warpgroup on one tile: the accumulator's (`acc`) start, the MMAs of every
    /// sub-stage, each stage released once the MMAs reading it have completed, the
    /// epilogue.
    fn consume(&mut self, r: &GemmRecipe, c: &Consumer, ring: &RingPosition, acc: &[Var]) -> R<()> {
        let place = self.own_place(r, c.w, c.wt)?;
        match r.acc_init {
            AccInit::Const(k) => {
                let k = self.konst(Constant::f32(k));
                for &v in acc {
                    self.write(v, k);
                }
            }
            AccInit::Own { padding } => {
                for (reg, &v) in acc.iter().enumerate() {
                    let pad = self.konst(Constant::f32(padding));
                    self.write(v, pad);
                    let (inside, addr) = self.out_element(r, &place, reg as u32)?;
                    self.if_(inside, |e| {
                        let x = e.def(Op::Load {
                            space: AddressSpace::Global,
                            ty: ScalarType::F32,
                            addr,
                            eviction: cuprum_ir::Eviction::Normal,
                        })?;
                        e.write(v, x);
                        Ok(())
                    })?;
                }
            }
        }
        let (w, bars) = (c.w, c.bars);
        let a_rows = self.u32c(64 * r.sk * r.elem_bytes());
        let a_offset = self.mul(w, a_rows)?;
        let sbo_a = 8 * r.sk * r.elem_bytes();
        let k_bytes = r.ty.k() * r.elem_bytes();
        self.ring_loop(r, c.total, ring, |e, u, _, stage, phase| {
            let full = e.barrier_addr_at(bars, 0, stage)?;
            e.mbarrier(MbarrierOp::WaitParity, full, Some(phase))?;
            if let Some(offsets) = c.fragments {
                // tf32, swapped: per K step, its fragments into registers (fresh ones: the
                // step before may still be reading its own), then its MMAs; the stage's
                // MMAs are waited for before the next stage's fragments reuse the registers.
                for kk in 0..r.sk / r.ty.k() {
                    let fragments = e.tf32_fragments(r, stage, offsets, kk)?;
                    e.push(Stmt::WgmmaFence);
                    let off = e.u32c(k_bytes * kk);
                    let a_addr = e.stage_addr(r, stage, off)?;
                    let da = e.descriptor(a_addr, 16, sbo_a, r.a_swizzle())?;
                    for (block, &fragment) in (0..r.blocks()).zip(&fragments) {
                        let regs = r.bm / 2;
                        let first = (block * regs) as usize;
                        let block_acc = &acc[first..first + regs as usize];
                        e.accumulate(
                            r.ty,
                            r.bm,
                            WgmmaA::Registers(fragment),
                            da,
                            false,
                            block_acc,
                        );
                    }
                }
                e.push(Stmt::WgmmaCommit);
                e.push(Stmt::WgmmaWait { pending: 0 });
                let empty = e.barrier_addr_at(bars, r.stages, stage)?;
                return e.mbarrier(MbarrierOp::Arrive, empty, None);
            }
            e.push(Stmt::WgmmaFence);
            for kk in 0..r.sk / r.ty.k() {
                let off = e.u32c(k_bytes * kk);
                let off = e.add(a_offset, off)?;
                let a_addr = e.stage_addr(r, stage, off)?;
                let da = e.descriptor(a_addr, 16, sbo_a, r.a_swizzle())?;
                let off = e.u32c(r.a_bytes() + kk * r.ty.k() * B_BOX_ROW_BYTES);
                let b_addr = e.stage_addr(r, stage, off)?;
                let db = e.descriptor(b_addr, r.b_box_bytes(), 1024, Swizzle::B128)?;
                e.accumulate(r.ty, r.bn, WgmmaA::Descriptor(da), db, true, acc);
            }
            e.push(Stmt::WgmmaCommit);
            e.push(Stmt::WgmmaWait { pending: 1 });
            let zero = e.i64c(0);
            let later = e.cmp(CmpOp::Gt, u, zero)?;
            e.if_(later, |e| {
                // The previous sub-stage's MMAs have completed: release its stage.
                let prev = e.previous_stage(r, stage)?;
                let empty = e.barrier_addr_at(bars, r.stages, prev)?;
                e.release_stage(r, empty)
            })?;
            Ok(())
        })?;
        if !r.swapped() {
            self.push(Stmt::WgmmaWait { pending: 0 });
            // The tile's last stage, released now that every MMA has completed (the
            // producer may be filling the next tile's stages during the epilogue).
            let zero = self.i64c(0);
            let used = self.cmp(CmpOp::Gt, c.total, zero)?;
            self.if_(used, |e| {
                let stage = e.read(ring.stage)?;
                let last = e.previous_stage(r, stage)?;
                let empty = e.barrier_addr_at(bars, r.stages, last)?;
                e.release_stage(r, empty)
            })?;
        }
        if let Some(staging) = c.staging {
            // TMA stores only what lies inside the tensor: a pair's second block past the
            // last row of tiles stores nothing.
            return self.staged_epilogue(r, c, staging, acc);
        }
        if r.cluster == 1 {
            return self.epilogue(r, &place, acc);
        }
        // A pair's second block past the last row of tiles stores nothing (the epilogue
        // tests no edge where the launch knows every tile is whole).
        let (Some([row, _]), Some([rows, _])) = (self.block_index, self.grid_dims) else {
            return Err(self.internal("a clustered tile without its place in the grid"));
        };
        let in_grid = self.cmp(CmpOp::Lt, row, rows)?;
        self.if_(in_grid, |e| e.epilogue(r, &place, acc))
    }

    /// The staged epilogue: the consumer's `64 x BN` part of the tile goes out in chunks of
    /// 64 rows by 128 bytes. The consumer's threads convert and write a chunk into one of
    /// its two buffers in TMA's 128-byte-swizzled box layout (a thread's pair of columns as
    /// one 4- or 8-byte store; with the swizzle a warp's stores meet in no bank), fence the
    /// writes for the async proxy and meet at the consumer's named barrier; its first
    /// thread stores the box with TMA (which writes only the elements inside the tensor)
    /// and waits until the box before has been read, and the consumer meets again before
    /// that box's buffer is written. The stores run while the consumer goes on (to the
    /// next chunk, and to the next tile's MMAs); before a tile's first chunk the first
    /// thread waits for the previous tile's last box to have been read.
    fn staged_epilogue(
        &mut self,
        r: &GemmRecipe,
        c: &Consumer,
        (out_map, buffers): (u32, u32),
        acc: &[Var],
    ) -> R<()> {
        let (w, wt) = (c.w, c.wt);
        let [warp, g, q] = self.lane_coordinates(wt)?;
        let zero = self.u32c(0);
        let issuer = self.cmp(CmpOp::Eq, wt, zero)?;
        // The thread's rows in the consumer's 64: `16 warp + g` and 8 below; in TMA's
        // swizzle a row's 16-byte units are permuted by the row modulo 8, which is `g`.
        let c16 = self.u32c(16);
        let row = self.mul(warp, c16)?;
        let row = self.add(row, g)?;
        let row_bytes = self.u32c(CHUNK_ROW_BYTES);
        let row_at = self.mul(row, row_bytes)?;
        let elem = r.out_elem.size_bytes();
        let q_bytes = self.u32c(2 * elem);
        let q_bytes = self.mul(q, q_bytes)?;
        // This consumer's buffers.
        let per_consumer = self.u32c(CHUNK_BUFFERS * CHUNK_ROWS * CHUNK_ROW_BYTES);
        let mine = self.mul(w, per_consumer)?;
        let first_buffer = self.u32c(buffers);
        let mine = self.add(first_buffer, mine)?;
        let mine = self.add(self.shared_base, mine)?;
        // The box's place: the tile's columns and this consumer's rows.
        let index = self
            .block_index
            .ok_or_else(|| self.internal("the GEMM recipe's block index is unset"))?;
        let (row_tile, col_tile) = (
            self.cast(index[0], ScalarType::I32)?,
            self.cast(index[1], ScalarType::I32)?,
        );
        let bm = self.konst(Constant::i32(r.bm as i32));
        let m0 = self.mul(row_tile, bm)?;
        let w32 = self.cast(w, ScalarType::I32)?;
        let rows = self.konst(Constant::i32(CHUNK_ROWS as i32));
        let m = self.mul(w32, rows)?;
        let m = self.add(m0, m)?;
        let bn = self.konst(Constant::i32(r.bn as i32));
        let n0 = self.mul(col_tile, bn)?;
        // The previous tile's last box has been read before its buffer is written again.
        self.if_(issuer, |e| {
            e.push(Stmt::Tma(TmaOp::WaitGroup {
                pending: 0,
                read: true,
            }));
            Ok(())
        })?;
        self.consumer_barrier(r, w)?;
        let width = r.chunk_columns();
        let chunks = r.bn / width;
        for chunk in 0..chunks {
            let offset = self.u32c((chunk % CHUNK_BUFFERS) * CHUNK_ROWS * CHUNK_ROW_BYTES);
            let buffer = self.add(mine, offset)?;
            for first in 0..r.accumulators() {
                let Some(second) = r.pair_of(first) else {
                    continue;
                };
                let (dr, dc) = r.acc_offset(first);
                if dc / width != chunk {
                    continue;
                }
                // Byte `(dc - chunk * width + 2 q) * elem` of row `row + dr`, swizzled.
                let byte = self.u32c((dc - chunk * width) * elem);
                let byte = self.add(byte, q_bytes)?;
                let four = self.u32c(4);
                let unit = self.bin(BinaryOp::Shr, byte, four)?;
                let unit = self.bin(BinaryOp::Xor, unit, g)?;
                let unit = self.bin(BinaryOp::Shl, unit, four)?;
                let fifteen = self.u32c(15);
                let within = self.bin(BinaryOp::And, byte, fifteen)?;
                let below = self.u32c(dr * CHUNK_ROW_BYTES);
                let at = self.add(buffer, row_at)?;
                let at = self.add(at, below)?;
                let at = self.add(at, unit)?;
                let at = self.add(at, within)?;
                let mut pair = Vec::with_capacity(2);
                for v in [acc[first as usize], acc[second as usize]] {
                    let x = self.read(v)?;
                    pair.push(if r.out_elem == ScalarType::F32 {
                        x
                    } else {
                        self.cast(x, r.out_elem)?
                    });
                }
                let built = self.b.vector_store(AddressSpace::Shared, at, pair);
                self.built(built)?;
            }
            self.push(Stmt::FenceProxyAsync {
                space: cuprum_ir::ProxyFenceSpace::SharedCta,
            });
            self.consumer_barrier(r, w)?;
            let column = self.konst(Constant::i32((chunk * width) as i32));
            let n = self.add(n0, column)?;
            self.if_(issuer, |e| {
                e.push(Stmt::Tma(TmaOp::StoreTile {
                    map: TensorMapRef::Param(out_map),
                    coords: vec![n, m],
                    src: buffer,
                }));
                e.push(Stmt::Tma(TmaOp::Commit));
                // The box before this one (in the other buffer) has been read.
                e.push(Stmt::Tma(TmaOp::WaitGroup {
                    pending: 1,
                    read: true,
                }));
                Ok(())
            })?;
            if chunk >= 1 && chunk + 1 < chunks {
                // The next chunk's buffer (the box before's) is written only after that
                // wait (the first two buffers were free from the start).
                self.consumer_barrier(r, w)?;
            }
        }
        Ok(())
    }

    /// A barrier of consumer `w`'s 128 threads: named barrier `1 + w`.
    fn consumer_barrier(&mut self, r: &GemmRecipe, w: Value) -> R<()> {
        let barrier = |e: &mut Self, id: u32| {
            e.push(Stmt::NamedBarrier {
                arrive: false,
                id,
                threads: WARPGROUP,
            });
            Ok(())
        };
        if r.consumers() == 1 {
            return barrier(self, 1);
        }
        let zero = self.u32c(0);
        let first = self.cmp(CmpOp::Eq, w, zero)?;
        self.if_else(first, |e| barrier(e, 1), |e| barrier(e, 2))
    }

    /// A consumer thread's release of the stage whose *empty* mbarrier is at `empty`, once
    /// the MMAs reading it have completed: every thread arrives; in a cluster, lane 0 of
    /// each warp arrives on the barrier of every block of the cluster (the stage holds B's
    /// boxes that every block copied into it, so each of them waits for the release; the
    /// warp's MMAs are the warpgroup's, complete for every lane after its wait, and the
    /// emulator counts their reads as lane 0's).
    fn release_stage(&mut self, r: &GemmRecipe, empty: Value) -> R<()> {
        if r.cluster == 1 {
            return self.mbarrier(MbarrierOp::Arrive, empty, None);
        }
        let lane = self.def(Op::Special(Special::LaneId))?;
        let zero = self.u32c(0);
        let signals = self.cmp(CmpOp::Eq, lane, zero)?;
        self.if_(signals, |e| {
            for rank in 0..r.cluster {
                let rank = e.u32c(rank);
                e.mbarrier(MbarrierOp::ArriveCluster, empty, Some(rank))?;
            }
            Ok(())
        })
    }

    /// One `wgmma` of `m64n{n}` adding `a · b` (B transposed: MN-major, when `trans_b`) to
    /// the accumulator variables `acc`.
    fn accumulate(
        &mut self,
        ty: WgmmaType,
        n: u32,
        a: WgmmaA,
        b: Value,
        trans_b: bool,
        acc: &[Var],
    ) {
        self.push(Stmt::WgmmaMma(Box::new(WgmmaMma {
            shape: WgmmaShape { ty, n },
            a,
            b,
            scale_d: ScaleD::Const(true),
            negate_a: false,
            negate_b: false,
            trans_a: false,
            trans_b,
            acc: acc.to_vec(),
        })));
    }

    /// The consumer thread's place in the output (`I64` row and column in the tensor), from
    /// which [`GemmRecipe::acc_offset`] places each accumulator register. 16-bit operands:
    /// `accumulator_position`'s row `16 (wt / 32) + (wt % 32) / 4` of the warpgroup's 64 rows
    /// and column `2 (wt % 4)`. `tf32` (swapped, the fragment's rows are columns of C): row
    /// `2 (wt % 4)`, column `2 tf32_pair` of the warpgroup's first block.
    fn own_place(&mut self, r: &GemmRecipe, w: Value, wt: Value) -> R<OwnPlace> {
        let [warp, g, q] = self.lane_coordinates(wt)?;
        let two = self.u32c(2);
        let q2 = self.mul(q, two)?;
        let (row, col) = if r.swapped() {
            (q2, self.tf32_column(r, w, warp, g)?)
        } else {
            let c16 = self.u32c(16);
            let row = self.mul(warp, c16)?;
            let row = self.add(row, g)?;
            let c64 = self.u32c(64);
            let wrow = self.mul(w, c64)?;
            (self.add(row, wrow)?, q2)
        };
        let index = self
            .block_index
            .ok_or_else(|| self.internal("the GEMM recipe's block index is unset"))?;
        let mut origin = Vec::with_capacity(2);
        for (b, n) in index.into_iter().zip([r.bm, r.bn]) {
            let b = self.cast(b, ScalarType::I64)?;
            let n = self.i64c(i64::from(n));
            origin.push(self.mul(b, n)?);
        }
        let row = self.cast(row, ScalarType::I64)?;
        let col = self.cast(col, ScalarType::I64)?;
        Ok(OwnPlace {
            row: self.add(origin[0], row)?,
            col: self.add(origin[1], col)?,
        })
    }

    /// A warpgroup thread `wt`'s warp, and its lane's group (`lane / 4`) and place in the
    /// group (`lane % 4`), the coordinates of `wgmma`'s fragment layouts (`U32`).
    fn lane_coordinates(&mut self, wt: Value) -> R<[Value; 3]> {
        let c32 = self.u32c(32);
        let c4 = self.u32c(4);
        let warp = self.bin(BinaryOp::Div, wt, c32)?;
        let lane = self.bin(BinaryOp::Rem, wt, c32)?;
        let g = self.bin(BinaryOp::Div, lane, c4)?;
        let t = self.bin(BinaryOp::Rem, lane, c4)?;
        Ok([warp, g, t])
    }

    /// `tf32`: the first of the two columns of the tile (`U32`) that fragment rows `g` and
    /// `g + 8` of warp `warp` of consumer `w` stand for in its first block: the consumer's
    /// blocks' start plus `2 tf32_pair`.
    fn tf32_column(&mut self, r: &GemmRecipe, w: Value, warp: Value, g: Value) -> R<Value> {
        let pair = self.tf32_pair(warp, g)?;
        let two = self.u32c(2);
        let col = self.mul(pair, two)?;
        let width = self.u32c(N_MULTIPLE * r.blocks());
        let first = self.mul(w, width)?;
        self.add(first, col)
    }

    /// `tf32`: the pair of columns of C (`U32`, within the warpgroup's block of 64) that
    /// fragment rows `g` and `g + 8` of warp `warp` of a warpgroup stand for, columns
    /// `2 pair` and `2 pair + 1`: the two elements a thread reads for registers 0 and 1 of
    /// its fragment (and 2 and 3) are neighbours in B's row, one 8-byte load. The pairs
    /// are spread so that the 16 threads of each half-warp load from 16 different 8-byte
    /// bank pairs through the 128-byte swizzle (`pair` bits: `g`'s bit 0, `g`'s bit 2, `warp`'s
    /// bit 0, `g`'s bit 1, `warp`'s bit 1, from the lowest).
    fn tf32_pair(&mut self, warp: Value, g: Value) -> R<Value> {
        let mut pair = None;
        for (of_warp, bit, to) in TF32_PAIR_BITS {
            let from = if of_warp { warp } else { g };
            let shift = self.u32c(bit);
            let x = self.bin(BinaryOp::Shr, from, shift)?;
            let one = self.u32c(1);
            let x = self.bin(BinaryOp::And, x, one)?;
            let shift = self.u32c(to);
            let x = self.bin(BinaryOp::Shl, x, shift)?;
            pair = Some(match pair {
                None => x,
                Some(p) => self.bin(BinaryOp::Or, p, x)?,
            });
        }
        pair.ok_or_else(|| self.internal("an empty pair"))
    }

    /// `tf32`: the byte offsets (`U32`) in a stage of the consumer thread's two 8-byte
    /// fragment loads (registers 0 and 1, then 2 and 3) of its first block and first K step:
    /// B's rows `k = wt % 4` and `k + 4`, columns `2 tf32_pair` and the next, in B's boxes of
    /// 32 columns under the 128-byte swizzle (16-byte chunk `column / 4` is chunk
    /// `column / 4 ^ k % 8` of its row). Other blocks and K steps are constant offsets
    /// (the swizzle's pattern repeats every 8 rows).
    fn tf32_fragment_offsets(&mut self, r: &GemmRecipe, w: Value, wt: Value) -> R<[Value; 2]> {
        let [warp, g, t] = self.lane_coordinates(wt)?;
        let n = self.tf32_column(r, w, warp, g)?;
        let c4 = self.u32c(4);
        let columns = self.u32c(r.b_box_columns());
        let b_box = self.bin(BinaryOp::Div, n, columns)?;
        let col = self.bin(BinaryOp::Rem, n, columns)?;
        let box_bytes = self.u32c(r.b_box_bytes());
        let box_at = self.mul(b_box, box_bytes)?;
        let a_bytes = self.u32c(r.a_bytes());
        let box_at = self.add(box_at, a_bytes)?;
        let chunk = self.bin(BinaryOp::Div, col, c4)?;
        let within = self.bin(BinaryOp::Rem, col, c4)?;
        let within = self.mul(within, c4)?;
        let mut offsets = [box_at; 2];
        for (h, offset) in offsets.iter_mut().enumerate() {
            let four_h = self.u32c(4 * h as u32);
            let k = self.add(t, four_h)?;
            let row_bytes = self.u32c(B_BOX_ROW_BYTES);
            let row = self.mul(k, row_bytes)?;
            let swizzled = self.bin(BinaryOp::Xor, chunk, k)?;
            let sixteen = self.u32c(16);
            let swizzled = self.mul(swizzled, sixteen)?;
            let at = self.add(box_at, row)?;
            let at = self.add(at, swizzled)?;
            *offset = self.add(at, within)?;
        }
        Ok(offsets)
    }

    /// `tf32`: the consumer thread's `wgmma` A fragments (`Bᵀ`'s) of K step `kk` of stage
    /// `stage`, block by block (`tf32_fragment_offsets`).
    fn tf32_fragments(
        &mut self,
        r: &GemmRecipe,
        stage: Value,
        offsets: [Value; 2],
        kk: u32,
    ) -> R<Vec<[Value; 4]>> {
        let mut all = Vec::with_capacity(r.blocks() as usize);
        for block in 0..r.blocks() {
            let mut regs = Vec::with_capacity(4);
            for offset in offsets {
                // The block's two boxes of 32 columns further, the K step's rows further.
                let step = 2 * block * r.b_box_bytes() + kk * r.ty.k() * B_BOX_ROW_BYTES;
                let step = self.u32c(step);
                let off = self.add(offset, step)?;
                let addr = self.stage_addr(r, stage, off)?;
                let pair = self
                    .b
                    .vector_load(AddressSpace::Shared, ScalarType::U32, addr, 2);
                regs.extend(self.built(pair)?);
            }
            let regs: [Value; 4] = regs
                .try_into()
                .map_err(|_| self.internal("a tf32 fragment of other than 4 registers"))?;
            all.push(regs);
        }
        Ok(all)
    }

    /// Whether accumulator register `reg`'s element is inside the output, and its address.
    fn out_element(&mut self, r: &GemmRecipe, place: &OwnPlace, reg: u32) -> R<(Value, Value)> {
        let (dr, dc) = r.acc_offset(reg);
        let dr = self.i64c(i64::from(dr));
        let dc = self.i64c(i64::from(dc));
        let row = self.add(place.row, dr)?;
        let col = self.add(place.col, dc)?;
        let t = self.tensor(r.out)?;
        let (base, offset, dims, strides) = (t.base, t.offset, t.dims.clone(), t.strides.clone());
        let mut inside: Option<Value> = None;
        for (&x, &d) in [row, col].iter().zip(&dims) {
            let x = self.cast(x, ScalarType::U64)?;
            let d = self.cast(d, ScalarType::U64)?;
            let lt = self.cmp(CmpOp::Lt, x, d)?;
            inside = self.and(inside, Some(lt))?;
        }
        let inside = inside.ok_or_else(|| self.internal("an output of rank 0"))?;
        let mut index = offset;
        for (&x, &s) in [row, col].iter().zip(&strides) {
            let term = self.mul(x, s)?;
            index = self.add(index, term)?;
        }
        let addr = self.element_address(base, index, r.out_elem)?;
        Ok((inside, addr))
    }

    /// Stores the accumulator (converted to the output's type) at the consumer thread's
    /// elements ([`GemmRecipe::acc_offset`]). A thread's elements lie on a few rows and, on
    /// each, in pairs of neighbouring columns ([`GemmRecipe::pair_of`]): the row tests and
    /// row addresses are computed once, and each pair is one store at a constant offset
    /// from its row's address, guarded by one comparison with the columns left (`dim1 -
    /// col0`), where the output's runs are aligned; element by element otherwise. Where the
    /// launch knows every tile is whole, nothing is tested. (Compact code matters: ptxas
    /// compiles it at the kernel's first launch.)
    fn epilogue(&mut self, r: &GemmRecipe, place: &OwnPlace, acc: &[Var]) -> R<()> {
        let t = self.tensor(r.out)?;
        let (base, offset) = (t.base, t.offset);
        let (dims, strides) = (t.dims.clone(), t.strides.clone());
        let paired = t.facts.aligned_runs;
        let whole = t.facts.whole_tiles(&[r.bm, r.bn]);
        let size = i64::from(r.out_elem.size_bytes());
        // Columns from the thread's first one to the tensor's end (negative past it).
        let left = self.bin(BinaryOp::Sub, dims[1], place.col)?;
        // Row by row (each row's test and address made where its stores are, so that few
        // are live at once: a thread of the swapped recipe has 32 rows), its pairs.
        let mut row_offsets: Vec<u32> = (0..r.accumulators()).map(|i| r.acc_offset(i).0).collect();
        row_offsets.sort_unstable();
        row_offsets.dedup();
        for dr in row_offsets {
            let dr64 = self.i64c(i64::from(dr));
            let row = self.add(place.row, dr64)?;
            let row_inside = if whole {
                None
            } else {
                let x = self.cast(row, ScalarType::U64)?;
                let d = self.cast(dims[0], ScalarType::U64)?;
                Some(self.cmp(CmpOp::Lt, x, d)?)
            };
            let at = self.mul(row, strides[0])?;
            let at = self.add(offset, at)?;
            let col = self.mul(place.col, strides[1])?;
            let at = self.add(at, col)?;
            let row_addr = self.element_address(base, at, r.out_elem)?;
            for first in 0..r.accumulators() {
                let Some(second) = r.pair_of(first) else {
                    continue;
                };
                let (pair_row, dc) = r.acc_offset(first);
                if pair_row != dr {
                    continue;
                }
                let dc = i64::from(dc);
                let mut values = Vec::with_capacity(2);
                for v in [acc[first as usize], acc[second as usize]] {
                    let x = self.read(v)?;
                    values.push(if r.out_elem == ScalarType::F32 {
                        x
                    } else {
                        self.cast(x, r.out_elem)?
                    });
                }
                // Column `dc + k` of the thread is inside when `dc + k < left`.
                let column_inside = |e: &mut Self, k: i64| -> R<Option<Value>> {
                    if whole {
                        return Ok(None);
                    }
                    let c = e.i64c(dc + k);
                    let lt = e.cmp(CmpOp::Lt, c, left)?;
                    e.and(row_inside, Some(lt))
                };
                let address = |e: &mut Self, k: i64| -> R<Value> {
                    let stride = if paired { e.i64c(1) } else { strides[1] };
                    let c = e.i64c(dc + k);
                    let off = e.mul(c, stride)?;
                    let bytes = e.i64c(size);
                    let off = e.mul(off, bytes)?;
                    let off = e.cast(off, ScalarType::U64)?;
                    e.add(row_addr, off)
                };
                let store = |e: &mut Self, inside: Option<Value>, addr: Value, v: Value| {
                    e.if_some(inside, |e| {
                        e.push(Stmt::Store {
                            space: AddressSpace::Global,
                            addr,
                            value: v,
                        });
                        Ok(())
                    })
                };
                if paired {
                    let addr = address(self, 0)?;
                    let both = column_inside(self, 1)?;
                    let pair = values.clone();
                    self.if_some(both, |e| {
                        let built = e.b.vector_store(AddressSpace::Global, addr, pair);
                        e.built(built)
                    })?;
                    if !whole {
                        // The tensor's last column alone (an odd width): the pair's first element.
                        let c = self.i64c(dc + 1);
                        let last = self.cmp(CmpOp::Eq, c, left)?;
                        let only = self.and(row_inside, Some(last))?;
                        store(self, only, addr, values[0])?;
                    }
                } else {
                    for (k, &v) in values.iter().enumerate() {
                        let addr = address(self, k as i64)?;
                        let inside = column_inside(self, k as i64)?;
                        store(self, inside, addr, v)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Where a thread is in the ring (see `Emitter::ring_position`).
struct RingPosition {
    count: Var,
    stage: Var,
    phase: Var,
}

/// Where the bits of `tf32`'s column pair come from (`Emitter::tf32_pair`): `(from the
/// warp rather than the group, bit, bit of the pair)`.
const TF32_PAIR_BITS: [(bool, u32, u32); 5] = [
    (false, 0, 0),
    (false, 2, 1),
    (true, 0, 2),
    (false, 1, 3),
    (true, 1, 4),
];

/// [`TF32_PAIR_BITS`] on numbers: the column pair of fragment rows `g` and `g + 8` of warp
/// `warp` of a warpgroup.
#[cfg(test)]
fn tf32_pair_of(warp: u32, g: u32) -> u32 {
    TF32_PAIR_BITS
        .iter()
        .map(|&(of_warp, bit, to)| (((if of_warp { warp } else { g }) >> bit) & 1) << to)
        .sum()
}

/// A consumer warpgroup's part in a tile: its index `w` among the consumers, the thread's
/// index `wt` in it, the tile's count of ring sub-stages (`I64`), where the mbarriers start,
/// (`tf32`) the thread's fragment offsets (`Emitter::tf32_fragment_offsets`), and the
/// staged epilogue's map and buffers.
struct Consumer {
    w: Value,
    wt: Value,
    total: Value,
    bars: u32,
    fragments: Option<[Value; 2]>,
    /// The staged epilogue's output tensor-map parameter and where its buffers start.
    staging: Option<(u32, u32)>,
}

/// A consumer thread's place in the output: row and column (`I64`).
struct OwnPlace {
    row: Value,
    col: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf32_column_pairs_cover_the_block_once() {
        let mut seen = [false; 32];
        for warp in 0..4 {
            for g in 0..8 {
                let p = tf32_pair_of(warp, g) as usize;
                assert!(!seen[p], "pair {p} twice");
                seen[p] = true;
            }
        }
    }

    /// Each half-warp's 8-byte fragment loads (rows `k = t` or `t + 4` of a 128-byte
    /// swizzled box, columns `2 pair` and the next) fall in 16 different bank pairs, for
    /// every warp and every row of the swizzle's period.
    #[test]
    fn tf32_fragment_loads_meet_in_no_bank() {
        for warp in 0..4 {
            for half_warp in 0..2 {
                for k_base in [0, 4] {
                    let mut banks = [false; 32];
                    for lane in 16 * half_warp..16 * half_warp + 16 {
                        let (g, t) = (lane / 4, lane % 4);
                        let k = t + k_base;
                        let col = (2 * tf32_pair_of(warp, g)) % 32;
                        let byte = k * B_BOX_ROW_BYTES + (((col / 4) ^ k) << 4) + (col % 4) * 4;
                        let bank = (byte / 4) % 32;
                        for b in [bank, bank + 1] {
                            assert!(
                                !banks[b as usize],
                                "warp {warp} lane {lane}: bank {b} twice"
                            );
                            banks[b as usize] = true;
                        }
                    }
                }
            }
        }
    }
}
