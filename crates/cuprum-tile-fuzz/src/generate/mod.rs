//! The random tile program generator: from a seed, a valid, specialized tile kernel and a
//! launch of it ([`Case`]) whose every output bit the tile IR defines, the same on every
//! backend.
//!
//! The program: one or two partitioned outputs cut into tiles of one *working shape* `W`
//! (one to three axes, each 1 to 40, or 16, 32, 64, 128, 256; ragged edge tiles), read-only inputs
//! of any rank in random views, scalar parameters, and a body of random statements:
//! element-wise operations on tiles of `W`, of other shapes in play and on rank-0 values;
//! shape operations that leave `W` and come back (permutations, reshapes, reductions
//! broadcast back, broadcasts of rows, columns and scalars); loads of tiles inside, at the
//! edge of and outside their tensors (by block index, by loop counter, by constant);
//! reductions; `if` with results, `for` and `loop` with carried values, `break`, `continue`,
//! early returns, assertions that hold; stores, also more than one to a tile and loads of a
//! block's own tile after them; gathers and scatters through raw pointers.
//!
//! What it keeps true, so that the interpreter, the emulator and the GPU must agree bit for
//! bit ([`Tolerance::Exact`]):
//! * No transcendental function (the GPU approximates them; the directed tests compare them
//!   within stated bounds).
//! * Float reductions that round (sum, product, and closures that add) take operands made
//!   exact first: rounded to integers and clamped to `[-K, K]`, with `K` small enough that
//!   every partial sum is exact in the type, and `K = 1` for products, so that any order of
//!   combination gives the same bits (no sum along an axis longer than `2^p`, the type's
//!   significand: 256 for `bf16`). `min`/`max` (built in or as a closure) are exact in any
//!   order but for the sign of a zero result, so `+ 0.0` follows them, as it follows every
//!   float `min`/`max`.
//! * NaN payloads are unspecified: float outputs compare any NaN equal to any NaN, and a
//!   float is made canonical (`x != x ? NaN : x`) where its bits are reinterpreted (both
//!   sides of a bitcast).
//! * Integer division and remainder get divisors made nonzero (and not `-1` under `MIN`) by
//!   selects; loops run a few iterations (bounds from constants or clamped data; a `u8`
//!   counter that would wrap stops); reduce closures are associative and commutative and
//!   carry their true identity (the lowering combines clamped registers with it).
//! * Views of inputs may repeat elements (stride 0); views of outputs never alias.
//! * Raw pointers are either gathered from (and never written) or scattered to by one
//!   statement, each block to places of its own: no element is touched by two blocks.

mod control;
mod coverage;
mod memory;
mod values;

pub use coverage::{COVERED, coverage};

use cuprum_ir::ScalarType;
use cuprum_tile_ir::{Op, Stmt, TileKernel, TileType, TileValue, shape_of};
use cuprum_tile_lower::LowerOptions;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::Case;
use crate::build::{CaseBuilder, InvalidCase};
use crate::compare::Tolerance;

use ScalarType as S;

/// What the generator makes, and how big.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// About how many statements the body gets (nested ones included).
    pub stmts: usize,
    /// The most elements of the working tile shape.
    pub max_tile_elements: u32,
    /// The most tile blocks in the grid.
    pub max_blocks: u32,
    /// How deep `if` and loops nest.
    pub max_depth: u32,
    /// The byte every output allocation starts as (the tests give
    /// `cuprum_testkit::poison::BYTE`).
    pub poison: u8,
}

impl Config {
    /// Programs small enough that a few hundred run in seconds on the emulator.
    pub fn ci(poison: u8) -> Self {
        Self {
            stmts: 16,
            max_tile_elements: 1024,
            max_blocks: 6,
            max_depth: 2,
            poison,
        }
    }

    /// Larger programs and tiles, for campaigns on a GPU.
    pub fn large(poison: u8) -> Self {
        Self {
            stmts: 40,
            max_tile_elements: 16384,
            max_blocks: 24,
            max_depth: 3,
            poison,
        }
    }
}

pub(crate) type R<T> = Result<T, InvalidCase>;

/// The element types of tiles, weighted toward the common ones.
const ELEMS: [(ScalarType, u32); 13] = [
    (S::F32, 6),
    (S::I32, 6),
    (S::F16, 2),
    (S::BF16, 2),
    (S::F64, 2),
    (S::U32, 3),
    (S::I64, 2),
    (S::U8, 2),
    (S::Bool, 3),
    (S::I8, 1),
    (S::I16, 1),
    (S::U16, 1),
    (S::U64, 1),
];

/// One loop being generated: the types of its carried values (what `break` and `continue`
/// give), and for a `loop` its counter (the first carried value, which a `continue` must
/// advance).
struct LoopFrame {
    types: Vec<TileType>,
    counter: Option<TileValue>,
}

/// The generator's state.
pub(crate) struct Gen<'c> {
    cfg: &'c Config,
    seed: u64,
    rng: SmallRng,
    /// The kernel and its arguments.
    cb: CaseBuilder,
    /// The partitioned outputs' parameter indices.
    outputs: Vec<u32>,
    /// The working shape: the outputs' tile.
    work: Vec<u32>,
    /// Blocks along each grid axis.
    grid: [u32; 3],
    /// The values visible in each open block, innermost last.
    scopes: Vec<Vec<TileValue>>,
    /// Open `if`s and loops.
    depth: u32,
    /// Statements still to generate.
    budget: usize,
    loops: Vec<LoopFrame>,
    /// How deep `fresh` operands nest (bounded, so operands stay small).
    level: u32,
}

/// The case of `seed`: a random program (kernel `tile_fuzz_<seed>`) and its launch.
pub fn generate(seed: u64, cfg: &Config) -> Result<Case, InvalidCase> {
    let mut g = Gen {
        cfg,
        seed,
        rng: SmallRng::seed_from_u64(seed),
        cb: CaseBuilder::new(format!("tile_fuzz_{seed}"), seed, cfg.poison),
        outputs: Vec::new(),
        work: Vec::new(),
        grid: [1; 3],
        scopes: vec![Vec::new()],
        depth: 0,
        budget: cfg.stmts,
        loops: Vec::new(),
        level: 0,
    };
    g.outputs_and_grid();
    g.body()?;
    g.finish()
}

impl Gen<'_> {
    // ----- randomness -----

    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p.clamp(0.0, 1.0))
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n.max(1))
    }

    /// One of `items`, which is never empty (every caller passes a list it built non-empty).
    pub(crate) fn choose<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }

    /// A random element type (`bool` too when `with_bool`).
    pub(crate) fn elem(&mut self, with_bool: bool) -> ScalarType {
        let pool: Vec<(ScalarType, u32)> = ELEMS
            .iter()
            .copied()
            .filter(|&(t, _)| with_bool || t != S::Bool)
            .collect();
        let total: u32 = pool.iter().map(|&(_, w)| w).sum();
        let mut x = self.rng.random_range(0..total);
        for (t, w) in pool {
            if x < w {
                return t;
            }
            x -= w;
        }
        S::F32
    }

    /// A random integer type.
    pub(crate) fn int_elem(&mut self) -> ScalarType {
        self.choose(&[S::I32, S::I32, S::U32, S::I64, S::U8, S::I16, S::U64, S::I8])
    }

    // ----- building -----

    pub(crate) fn error(&self, message: String) -> InvalidCase {
        self.cb.invalid(message)
    }

    /// Appends `value = op` and makes it visible.
    pub(crate) fn def(&mut self, op: Op) -> R<TileValue> {
        let v = self.def_hidden(op)?;
        self.expose(v);
        Ok(v)
    }

    /// Appends `value = op` without offering it to later operations (helpers whose raw
    /// value must not be used: a divisor before it is made safe, a float before it is
    /// made canonical).
    pub(crate) fn def_hidden(&mut self, op: Op) -> R<TileValue> {
        let what = format!("{op:?}");
        self.cb
            .b
            .def(op)
            .map_err(|e| self.error(format!("{e} (in {what})")))
    }

    /// Offers `v` to later operations in the open block.
    pub(crate) fn expose(&mut self, v: TileValue) {
        if let Some(s) = self.scopes.last_mut() {
            s.push(v);
        }
    }

    pub(crate) fn push(&mut self, s: Stmt) {
        self.cb.b.push(s);
    }

    pub(crate) fn ty(&self, v: TileValue) -> TileType {
        self.cb.b.ty(v).clone()
    }

    pub(crate) fn elem_of(&self, v: TileValue) -> ScalarType {
        self.cb.b.ty(v).elem.known().unwrap_or(S::U8)
    }

    pub(crate) fn shape_of_value(&self, v: TileValue) -> Vec<u32> {
        cuprum_tile_ir::known_sizes(&self.cb.b.ty(v).shape).unwrap_or_default()
    }

    /// A visible value of `elem` and `shape`, if any.
    pub(crate) fn pick(&mut self, elem: ScalarType, shape: &[u32]) -> Option<TileValue> {
        let want = TileType::new(elem, shape_of(shape));
        let found: Vec<TileValue> = self
            .scopes
            .iter()
            .flatten()
            .copied()
            .filter(|&v| self.cb.b.ty(v) == &want)
            .collect();
        if found.is_empty() {
            None
        } else {
            Some(found[self.below(found.len())])
        }
    }

    /// A visible value satisfying `keep`, if any.
    pub(crate) fn pick_where(&mut self, keep: impl Fn(&TileType) -> bool) -> Option<TileValue> {
        let found: Vec<TileValue> = self
            .scopes
            .iter()
            .flatten()
            .copied()
            .filter(|&v| keep(self.cb.b.ty(v)))
            .collect();
        if found.is_empty() {
            None
        } else {
            Some(found[self.below(found.len())])
        }
    }

    /// Runs `f` in a nested block (its values visible only inside), returning the block
    /// with `f`'s yields.
    pub(crate) fn nested(
        &mut self,
        visible: &[TileValue],
        f: impl FnOnce(&mut Self) -> R<Vec<TileValue>>,
    ) -> R<cuprum_tile_ir::Block> {
        self.cb.b.begin_block();
        self.scopes.push(visible.to_vec());
        let r = f(self);
        self.scopes.pop();
        let yields = r?;
        Ok(self.cb.b.end_block(yields))
    }

    // ----- shapes -----

    /// A tile size: mostly 1 to 40, now and then 16 to 256 in multiples of 16 (the sizes
    /// tensor-core `mma`s take; or an odd one).
    fn tile_size(&mut self) -> u32 {
        match self.below(20) {
            0..=6 => self.rng.random_range(1..=8),
            7..=12 => self.rng.random_range(9..=40),
            13..=16 => self.choose(&[16, 32, 64, 128, 256]),
            17 => 1,
            _ => self.choose(&[48, 96, 100, 33, 63, 65, 17]),
        }
    }

    /// A tile shape of `rank` axes within the element budget.
    fn tile_shape(&mut self, rank: usize) -> Vec<u32> {
        let mut tile: Vec<u32> = (0..rank).map(|_| self.tile_size()).collect();
        let cap = self.cfg.max_tile_elements.max(1);
        while tile.iter().product::<u32>() > cap {
            if let Some(m) = tile.iter_mut().max_by_key(|d| **d) {
                *m = (*m / 2).max(1);
            }
        }
        tile
    }

    /// The size of a tensor cut into `g` tiles of `t` along an axis: the last tile whole
    /// or ragged.
    fn extent(&mut self, t: u32, g: u32) -> u64 {
        let (t, g) = (u64::from(t), u64::from(g));
        let ragged = if self.chance(0.55) {
            self.rng.random_range(0..t)
        } else {
            0
        };
        g * t - ragged
    }

    /// The outputs, the working shape `W` (the first output's tile), the grid, and their
    /// tensors. A second output has the same tile, or its own of any rank whose tensor gives
    /// the same grid.
    fn outputs_and_grid(&mut self) {
        let rank = match self.below(20) {
            0..=6 => 1,
            7..=15 => 2,
            _ => 3,
        };
        self.work = self.tile_shape(rank);
        // Blocks per axis, at most `max_blocks` in all.
        let mut grid = [1u32; 3];
        for d in 0..rank {
            let used: u32 = grid.iter().product();
            let room = (self.cfg.max_blocks / used).max(1);
            grid[d] = self.rng.random_range(1..=room.min(3));
        }
        self.grid = grid;
        let count = if self.chance(0.3) { 2 } else { 1 };
        for i in 0..count {
            let elem = self.elem(true);
            let tile = if i == 0 || self.chance(0.5) {
                self.work.clone()
            } else {
                // Any rank whose axes past the grid's blocks have one block.
                let ranks: Vec<usize> = (1..=3).filter(|&r| (r..3).all(|d| grid[d] == 1)).collect();
                let r = self.choose(&ranks);
                self.tile_shape(r)
            };
            let shape: Vec<u64> = tile
                .iter()
                .enumerate()
                .map(|(d, &t)| self.extent(t, grid[d]))
                .collect();
            let kind = if self.chance(0.5) {
                crate::tensor::ViewKind::Contiguous
            } else {
                crate::tensor::ViewKind::Injective
            };
            let p = self.output_param(&format!("out{i}"), elem, &tile, &shape, kind);
            self.outputs.push(p);
        }
    }

    // ----- the body -----

    fn body(&mut self) -> R<()> {
        // Some statements, a store to each output, more statements, the final stores.
        let first = self.budget / 2;
        self.stmts(first)?;
        let outputs = self.outputs.clone();
        for o in outputs.iter().copied() {
            if self.chance(0.4) {
                self.store(o)?;
            }
        }
        let rest = self.budget;
        self.stmts(rest)?;
        for o in outputs {
            self.store(o)?;
        }
        self.observe()
    }

    /// Generates about `n` statements into the open block (fewer when the budget runs
    /// out); stops early after a terminator.
    pub(crate) fn stmts(&mut self, n: usize) -> R<()> {
        for _ in 0..n {
            if self.budget == 0 || self.cb.b.block_ended() {
                break;
            }
            self.budget -= 1;
            self.stmt()?;
        }
        Ok(())
    }

    /// One random statement.
    fn stmt(&mut self) -> R<()> {
        let can_nest = self.depth < self.cfg.max_depth && self.budget >= 2;
        match self.below(100) {
            0..=34 => {
                let (elem, shape) = self.shape_in_play();
                self.elementwise(elem, &shape)?;
            }
            35..=44 => self.shape_stmt()?,
            45..=54 => self.reduce_stmt()?,
            55..=61 => {
                let elem = self.elem(true);
                let shape = self.work.clone();
                let v = self.load(elem, &shape)?;
                self.expose(v);
            }
            62..=69 if can_nest => self.if_stmt()?,
            70..=77 if can_nest => self.for_stmt()?,
            78..=81 if can_nest => self.loop_stmt()?,
            82..=85 => {
                let o = self.choose(&self.outputs.clone());
                self.store(o)?;
            }
            86..=88 => self.assert_true()?,
            89..=91 if !self.loops.is_empty() => self.leave_loop_maybe()?,
            92 if self.depth > 0 => self.push(Stmt::Return),
            93..=94 => self.scatter()?,
            _ => {
                let (elem, shape) = self.shape_in_play();
                let v = self.fresh(elem, &shape)?;
                self.expose(v);
            }
        }
        Ok(())
    }

    /// An element type and a shape to compute in: mostly `W`, sometimes rank 0, sometimes
    /// the shape of a value already made.
    fn shape_in_play(&mut self) -> (ScalarType, Vec<u32>) {
        let elem = self.elem(true);
        let shape = match self.below(20) {
            0..=10 => self.work.clone(),
            11..=14 => Vec::new(),
            _ => match self.pick_where(|_| true) {
                Some(v) => self.shape_of_value(v),
                None => self.work.clone(),
            },
        };
        (elem, shape)
    }

    /// Validates the kernel and makes the case.
    fn finish(mut self) -> Result<Case, InvalidCase> {
        let options = LowerOptions {
            num_warps: warps_option(self.cb.b.kernel(), &mut self.rng),
            // The occupancy hint only bounds registers (ptxas may spill): results must not
            // change.
            occupancy: self
                .rng
                .random_bool(0.2)
                .then(|| 1 << self.rng.random_range(0..4u32)),
            ..LowerOptions::default()
        };
        let with_facts = self.rng.random_bool(0.5);
        let case = self.cb.finish(Tolerance::Exact, options)?;
        Ok(if with_facts {
            case.with_tensor_facts()
        } else {
            case
        })
    }
}

/// Now and then a number of warps of the case's own (a power of two up to 32, enough that
/// the kernel's largest tile fits the lowering's 128 registers per thread even if its layout
/// pads it); else the lowering's choice.
fn warps_option(kernel: &TileKernel, rng: &mut SmallRng) -> Option<u32> {
    if !rng.random_bool(0.3) {
        return None;
    }
    let words = kernel
        .values
        .iter()
        .filter_map(|(_, t)| {
            let n = cuprum_tile_ir::element_count(&t.shape)?;
            let w = t.elem.known().map_or(1, |e| e.size_bytes().div_ceil(4));
            Some(n * u64::from(w))
        })
        .max()
        .unwrap_or(1);
    // A layout may hold up to eight times a tile's elements (each axis padded to a power
    // of two): leave that much room.
    let mut least = 1u32;
    while u64::from(least) * 32 * 128 < 8 * words {
        least *= 2;
    }
    let choices: Vec<u32> = [1u32, 2, 4, 8, 16, 32]
        .into_iter()
        .filter(|&w| w >= least)
        .collect();
    if choices.is_empty() {
        return None;
    }
    Some(choices[rng.random_range(0..choices.len())])
}
