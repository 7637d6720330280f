//! The random program generator: from a seed, a [`Program`] whose every output bit the IR's
//! documented semantics define.
//!
//! What it keeps true, so that the host reference, the emulator and the GPU must agree:
//! * Uniformity ([`Level`]): every value and variable is known to be the same across the
//!   block, across the warp, or neither. Warp operations are made only where every live lane
//!   of the warp executes them together (all enclosing conditions warp-uniform, no lane
//!   broken out of or continued past the enclosing loops' current iteration); barriers,
//!   shared-memory exchanges and shared counters only where the whole block is together.
//!   Loops with thread-dependent trip counts or breaks make their body thread-level.
//! * Shared memory: an exchange is `barrier; slot[tid] = v; barrier`, after which any thread
//!   may read any slot until the next exchange's first barrier; shared counters are set by
//!   thread 0 between barriers, updated atomically, and read after a barrier.
//! * Atomics: each counter has one family of operations that commute (add and sub, or one of
//!   and, or, xor, min, max), so its final value does not depend on the order threads run;
//!   an old value is used only for bits no thread changes; float counters add small
//!   integers (exact in any order). Per-thread slots take any operation.
//! * Floats: NaN payloads are not specified, so a float is made canonical (`x != x ? NaN :
//!   x`) before its bits are seen (stores to outputs, bitcasts); the sign of zero from
//!   `min`/`max` of `+0` and `-0` is not specified, so their results get `+ 0.0`.
//!   Transcendental functions are approximate on the GPU and never generated.
//! * Integer division: divisors are made nonzero (and not `-1` under `MIN`) by selects,
//!   unless [`Config::traps`] asks for checked divisions and bounds checks that may fail.

mod expr;

use cuprum_ir::{AtomicOp, BinaryOp, CmpOp, Constant, ScalarType};
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use crate::program::{Array, Check, Id, Node, Param, Place, Program, Role, Source, Stmt};

use ScalarType as S;

/// How uniform a value (or the control flow reaching a statement) is. Ordered: `Block` is
/// the most uniform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The same in every thread of the block.
    Block,
    /// The same in every lane of a warp.
    Warp,
    /// Per thread.
    Thread,
}

/// What the generator may make and how big.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Statements to generate, about (composites count as several).
    pub stmts: usize,
    /// Most warps per block (blocks are 32 to `32 * max_warps` threads).
    pub max_warps: u32,
    /// Most blocks in the grid.
    pub max_blocks: u32,
    /// Checked divisions by possibly-zero divisors and bounds checks that may fail: the
    /// launch may trap (never on a GPU: a trap ends the CUDA context).
    pub traps: bool,
    /// Votes after some threads may have returned (the IR defines them over the live lanes).
    pub votes_after_return: bool,
    /// How many of the latest values in scope each output site hashes (with every
    /// variable).
    pub hash_values: usize,
}

impl Config {
    /// Small kernels for CI on the emulator.
    pub fn ci() -> Self {
        Self {
            stmts: 60,
            max_warps: 4,
            max_blocks: 2,
            traps: false,
            votes_after_return: true,
            hash_values: 48,
        }
    }

    /// Larger launches for the GPU run; kernels of about the same size as in CI, since the
    /// driver's JIT time grows with them (tens of milliseconds per kernel).
    pub fn gpu() -> Self {
        Self {
            stmts: 60,
            max_warps: 8,
            max_blocks: 4,
            traps: false,
            votes_after_return: true,
            hash_values: 24,
        }
    }
}

/// A value the generator may use, with its type and uniformity.
#[derive(Clone, Copy, Debug)]
struct Avail {
    id: Id,
    ty: ScalarType,
    level: Level,
}

/// An enclosing `If` or `Loop` as the generator sees it.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// The uniformity of the condition (If) or of the trip count and breaks (Loop).
    level: Level,
    is_loop: bool,
    /// For loops: the least uniform `continue` so far in this body (the rest of the current
    /// iteration runs with fewer lanes).
    taint: Level,
}

/// A buffer of counters: its parameter, element type, and each element's operation family.
#[derive(Clone, Debug)]
struct Counters {
    place: CounterPlace,
    ty: ScalarType,
    /// Each counter's operations, and how many of its low bits no update changes (so that
    /// the old value's low bits may be used), if any.
    families: Vec<(Family, Option<u32>)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CounterPlace {
    Global(u32),
    Shared(u32),
}

/// The operations one counter takes; they commute with each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    AddSub,
    And,
    Or,
    Xor,
    Min,
    Max,
}

/// A shared array for exchanges: one slot per thread of the block.
#[derive(Clone, Copy, Debug)]
struct Exchange {
    array: u32,
    ty: ScalarType,
    written: bool,
}

struct Gen {
    rng: SmallRng,
    cfg: Config,
    p: Program,
    var_levels: Vec<Level>,
    /// Variables that count loop trips: nothing else writes them.
    counters_vars: Vec<u32>,
    /// Open statement lists, innermost last.
    open: Vec<Vec<Stmt>>,
    pool: Vec<Avail>,
    frames: Vec<Frame>,
    /// Some thread may have returned.
    exited: bool,
    /// `frames.len()` where the open shared-counter scope began, if one is open.
    scope_at: Option<usize>,
    budget: usize,
    palette: Vec<ScalarType>,
    tid: Id,
    lane: Id,
    gid: Id,
    inputs: Vec<(u32, ScalarType, u32)>,
    outputs: Vec<(u32, ScalarType)>,
    /// An output with several consecutive elements per thread (stores the optimizer may
    /// merge into vector stores): parameter, type, elements per thread.
    wide: Option<(u32, ScalarType, u32)>,
    private: Vec<(u32, ScalarType)>,
    counters: Vec<Counters>,
    shared_counters: Option<Counters>,
    exchanges: Vec<Exchange>,
    local: Option<(u32, ScalarType, u32)>,
    /// With [`Config::traps`]: whether this program's failing checks are divisions (else
    /// bounds checks). One kind per program, since which failing thread a backend reports
    /// first is not specified.
    trap_divisions: bool,
}

/// The most uniform of nothing: a constant's level.
const CONST: Level = Level::Block;

impl Gen {
    // ---- building blocks -------------------------------------------------------------

    fn push(&mut self, s: Stmt) {
        if let Some(b) = self.open.last_mut() {
            b.push(s);
        }
    }

    /// Defines a value without offering it to later statements.
    fn def_hidden(&mut self, node: Node, ty: ScalarType) -> Id {
        let id = self.p.types.len() as Id;
        self.p.types.push(ty);
        self.push(Stmt::Def(id, node));
        id
    }

    /// Defines a value of type `ty` and uniformity `level` and offers it.
    fn def(&mut self, node: Node, ty: ScalarType, level: Level) -> Id {
        let id = self.def_hidden(node, ty);
        self.pool.push(Avail { id, ty, level });
        id
    }

    fn konst(&mut self, ty: ScalarType, bits: u64) -> Id {
        self.def_hidden(Node::Const(Constant::new(ty, bits)), ty)
    }

    fn ty_of(&self, id: Id) -> ScalarType {
        self.p.types[id as usize]
    }

    fn level_of(&self, id: Id) -> Level {
        self.pool
            .iter()
            .rev()
            .find(|a| a.id == id)
            .map_or(Level::Thread, |a| a.level)
    }

    /// The least uniform of the operands' levels.
    fn lv(&self, ids: &[Id]) -> Level {
        ids.iter().map(|&i| self.level_of(i)).max().unwrap_or(CONST)
    }

    /// The uniformity of the control flow here.
    fn ctx(&self) -> Level {
        self.frames
            .iter()
            .map(|f| f.level.max(f.taint))
            .max()
            .unwrap_or(Level::Block)
    }

    fn in_loop(&self) -> bool {
        self.frames.iter().any(|f| f.is_loop)
    }

    /// Whether every live lane of the warp is here together (shuffles need all 32).
    fn warp_ok(&self) -> bool {
        self.ctx() <= Level::Warp && !self.exited
    }

    /// Whether the whole block is here together (barriers, exchanges, shared counters).
    fn block_ok(&self) -> bool {
        self.ctx() == Level::Block && !self.exited
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn ty(&mut self) -> ScalarType {
        let i = self.rng.random_range(0..self.palette.len());
        self.palette[i]
    }

    /// A value of type `ty` no less uniform than `max`: mostly a recent one from the pool,
    /// sometimes a constant or a conversion of another value.
    fn pick(&mut self, ty: ScalarType, max: Level) -> Id {
        let matching: Vec<Id> = self
            .pool
            .iter()
            .filter(|a| a.ty == ty && a.level <= max)
            .map(|a| a.id)
            .collect();
        if matching.is_empty() || self.chance(0.12) {
            if ty != S::Bool && self.chance(0.4) {
                let from = self.ty();
                let src: Vec<Id> = self
                    .pool
                    .iter()
                    .filter(|a| a.ty == from && a.level <= max && a.ty != ty)
                    .map(|a| a.id)
                    .collect();
                if let Some(&s) = src.choose(&mut self.rng) {
                    return self.cast(s, ty);
                }
            }
            let bits = crate::inputs::random_bits(&mut self.rng, ty);
            return self.def(Node::Const(Constant::new(ty, bits)), ty, CONST);
        }
        let recent = matching.len().saturating_sub(12);
        if self.chance(0.7) {
            matching[self.rng.random_range(recent..matching.len())]
        } else {
            matching[self.rng.random_range(0..matching.len())]
        }
    }

    /// A `Bool` of uniformity at most `max`, often a fresh comparison.
    fn cond(&mut self, max: Level) -> Id {
        if self.chance(0.6) {
            let ty = self.ty();
            let ty = if ty == S::Bool { S::U32 } else { ty };
            let (a, b) = (self.pick(ty, max), self.pick(ty, max));
            let op = *[
                CmpOp::Eq,
                CmpOp::Ne,
                CmpOp::Lt,
                CmpOp::Le,
                CmpOp::Gt,
                CmpOp::Ge,
            ]
            .choose(&mut self.rng)
            .unwrap_or(&CmpOp::Lt);
            let l = self.lv(&[a, b]);
            return self.def(Node::Compare(op, a, b), S::Bool, l);
        }
        self.pick(S::Bool, max)
    }

    /// Rust's `as` of `v` to `to` (a `Bool` target becomes `v != 0`).
    fn cast(&mut self, v: Id, to: ScalarType) -> Id {
        let l = self.lv(&[v]);
        let from = self.ty_of(v);
        if to == S::Bool {
            let zero = self.konst(from, 0);
            return self.def(Node::Compare(CmpOp::Ne, v, zero), S::Bool, l);
        }
        self.def(Node::Cast(v, to), to, l)
    }

    /// `x`, with every NaN replaced by one fixed NaN, so its bits are defined.
    fn canonical(&mut self, x: Id) -> Id {
        let ty = self.ty_of(x);
        if !ty.is_float() {
            return x;
        }
        let l = self.lv(&[x]);
        let nan = self.konst(ty, u64::MAX >> (65 - ty.bits()));
        let is_nan = self.def_hidden(Node::Compare(CmpOp::Ne, x, x), S::Bool);
        self.def(Node::Select(is_nan, nan, x), ty, l)
    }

    /// A `U32` in `[0, len)` no less uniform than `max`.
    fn index(&mut self, len: u32, max: Level) -> Id {
        if max == Level::Thread && self.chance(0.4) && len >= self.p.threads() {
            return self.gid;
        }
        let u = self.pick(S::U32, max);
        let l = self.lv(&[u]);
        if len.is_power_of_two() && self.chance(0.5) {
            let m = self.konst(S::U32, u64::from(len - 1));
            self.def(Node::Binary(BinaryOp::And, u, m), S::U32, l)
        } else {
            let n = self.konst(S::U32, u64::from(len));
            self.def(Node::Binary(BinaryOp::Rem, u, n), S::U32, l)
        }
    }

    // ---- structure -------------------------------------------------------------------

    /// Generates up to `n` statements into the current block.
    fn stmts(&mut self, n: usize) {
        for _ in 0..n {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            self.stmt();
        }
    }

    /// Generates a nested block of up to `n` statements under `frame`; what it defines is
    /// not visible afterwards, and shared arrays it writes count as unwritten after it.
    fn nested(&mut self, frame: Frame, n: usize, prefix: impl FnOnce(&mut Self)) -> Vec<Stmt> {
        let mark = self.pool.len();
        let written: Vec<bool> = self.exchanges.iter().map(|e| e.written).collect();
        self.frames.push(frame);
        self.open.push(Vec::new());
        prefix(self);
        self.stmts(n);
        let body = self.open.pop().unwrap_or_default();
        self.frames.pop();
        self.pool.truncate(mark);
        // Arrays first used inside count as unwritten too.
        for (i, e) in self.exchanges.iter_mut().enumerate() {
            e.written = written.get(i).copied().unwrap_or(false);
        }
        body
    }

    fn stmt(&mut self) {
        if self.cfg.traps && self.chance(0.05) {
            self.trap_check();
            return;
        }
        let depth = self.frames.len();
        match self.rng.random_range(0..100) {
            0..=39 => {
                let ty = self.ty();
                self.expr(ty);
            }
            40..=45 => self.set_var(),
            46..=47 => self.store_output(),
            48 => self.store_wide(),
            49 => self.consecutive_loads(),
            50..=57 if depth < 3 => self.if_stmt(),
            58..=63 if depth < 3 && self.frames.iter().filter(|f| f.is_loop).count() < 2 => {
                self.loop_stmt()
            }
            64..=67 if self.in_loop() => self.break_or_continue(),
            68..=71 if self.block_ok() => self.exchange(),
            72..=74 if self.block_ok() && self.shared_counters.is_none() => {
                self.shared_counter_scope()
            }
            75..=78 => self.global_atomic(),
            79..=82 if self.shared_counters.is_some() => self.shared_atomic(),
            83..=85 => self.private_atomic(),
            86..=89 if self.warp_ok() => self.warp_composite(),
            90..=92 if self.local.is_some() => self.local_store(),
            93 if self.ctx() == Level::Block => self.push(Stmt::Barrier),
            94 if !self.in_loop() && self.scope_at.is_none() => self.early_return(),
            _ => {
                let ty = self.ty();
                self.expr(ty);
            }
        }
    }

    fn set_var(&mut self) {
        let ctx = self.ctx();
        let vars: Vec<u32> = (0..self.p.vars.len() as u32)
            .filter(|&v| self.var_levels[v as usize] >= ctx && !self.counters_vars.contains(&v))
            .collect();
        let Some(&var) = vars.choose(&mut self.rng) else {
            return;
        };
        let (ty, level) = (self.p.vars[var as usize], self.var_levels[var as usize]);
        let value = if self.chance(0.5) {
            // Something computed from the variable itself, so loops carry state.
            let old = self.def(Node::ReadVar(var), ty, level);
            let other = self.pick(ty, level);
            self.combine(old, other)
        } else {
            self.pick(ty, level)
        };
        self.push(Stmt::SetVar(var, value));
    }

    /// One binary operation of `a` and `b` (of one type) that is defined for their type.
    fn combine(&mut self, a: Id, b: Id) -> Id {
        let ty = self.ty_of(a);
        let l = self.lv(&[a, b]);
        let op = if ty == S::Bool {
            *[BinaryOp::And, BinaryOp::Or, BinaryOp::Xor]
                .choose(&mut self.rng)
                .unwrap_or(&BinaryOp::Xor)
        } else if ty.is_float() {
            *[BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul]
                .choose(&mut self.rng)
                .unwrap_or(&BinaryOp::Add)
        } else {
            *[
                BinaryOp::Add,
                BinaryOp::Sub,
                BinaryOp::Mul,
                BinaryOp::Xor,
                BinaryOp::Or,
                BinaryOp::Min,
                BinaryOp::Max,
            ]
            .choose(&mut self.rng)
            .unwrap_or(&BinaryOp::Add)
        };
        self.def(Node::Binary(op, a, b), ty, l)
    }

    /// Stores into every element of this thread's part of the wide output, one store after
    /// another.
    fn store_wide(&mut self) {
        let Some((param, ty, per)) = self.wide else {
            return;
        };
        let values: Vec<Id> = (0..per)
            .map(|_| {
                let v = self.pick(ty, Level::Thread);
                self.canonical(v)
            })
            .collect();
        let k = self.konst(S::U32, u64::from(per));
        let base = self.def_hidden(Node::Binary(BinaryOp::Mul, self.gid, k), S::U32);
        for (j, value) in values.into_iter().enumerate() {
            let index = if j == 0 {
                base
            } else {
                let c = self.konst(S::U32, j as u64);
                self.def_hidden(Node::Binary(BinaryOp::Add, base, c), S::U32)
            };
            self.push(Stmt::Store {
                place: Place::Buffer { param, index },
                value,
            });
        }
    }

    /// Loads 2 or 4 consecutive elements of an input, from an element index that is a
    /// multiple of the count (loads the optimizer may merge into one vector load).
    fn consecutive_loads(&mut self) {
        let inputs: Vec<(u32, ScalarType, u32)> = self
            .inputs
            .iter()
            .copied()
            .filter(|i| i.1 != S::Bool && i.2 % 4 == 0)
            .collect();
        let Some(&(param, ty, len)) = inputs.choose(&mut self.rng) else {
            return;
        };
        let n: u32 = *[2, 4].choose(&mut self.rng).unwrap_or(&4);
        let groups = 1u32 << (31 - (len / n).leading_zeros());
        let u = self.pick(S::U32, Level::Thread);
        let l = self.lv(&[u]);
        let m = self.konst(S::U32, u64::from(groups - 1));
        let g = self.def_hidden(Node::Binary(BinaryOp::And, u, m), S::U32);
        let k = self.konst(S::U32, u64::from(n));
        let base = self.def_hidden(Node::Binary(BinaryOp::Mul, g, k), S::U32);
        for j in 0..n {
            let index = if j == 0 {
                base
            } else {
                let c = self.konst(S::U32, u64::from(j));
                self.def_hidden(Node::Binary(BinaryOp::Add, base, c), S::U32)
            };
            if self.chance(0.3) {
                self.push(Stmt::Check(Check::Bounds { param, index }));
            }
            self.def(Node::Load(Place::Buffer { param, index }), ty, l);
        }
    }

    /// Stores a value into one of this thread's output elements.
    fn store_output(&mut self) {
        let Some(&(param, ty)) = self.outputs.choose(&mut self.rng) else {
            return;
        };
        let v = self.pick(ty, Level::Thread);
        let v = self.canonical(v);
        let index = self.gid;
        self.push(Stmt::Store {
            place: Place::Buffer { param, index },
            value: v,
        });
    }

    fn if_stmt(&mut self) {
        // Uniform conditions often, so that warp operations and barriers can nest.
        let max = *[Level::Block, Level::Warp, Level::Thread, Level::Thread]
            .choose(&mut self.rng)
            .unwrap_or(&Level::Thread);
        let cond = self.cond(max);
        let level = self.lv(&[cond]);
        let frame = Frame {
            level,
            is_loop: false,
            taint: Level::Block,
        };
        let n = self.rng.random_range(1..6);
        let then = self.nested(frame, n, |_| {});
        let n = if self.chance(0.5) {
            self.rng.random_range(1..4)
        } else {
            0
        };
        let otherwise = self.nested(frame, n, |_| {});
        self.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
    }

    /// A loop counted by a new variable up to a bound of the chosen uniformity, with
    /// `break`s and `continue`s inside.
    fn loop_stmt(&mut self) {
        let ctx = self.ctx();
        let level = *[Level::Block, Level::Warp, Level::Thread]
            .choose(&mut self.rng)
            .unwrap_or(&Level::Thread);
        let level = level.max(ctx);
        let counter = self.p.vars.len() as u32;
        self.p.vars.push(S::U32);
        self.var_levels.push(level);
        self.counters_vars.push(counter);
        let zero = self.konst(S::U32, 0);
        self.push(Stmt::SetVar(counter, zero));
        // The bound: up to 6 trips (3 in a nested loop), from a value of the loop's
        // uniformity; the end, `bound * step`, is computed before the loop, as the optimizer's
        // unrolling by four wants.
        let most = if self.in_loop() { 4 } else { 7 };
        let bound = if self.chance(0.3) {
            let n = self.rng.random_range(0..most);
            self.konst(S::U32, n)
        } else {
            let u = self.pick(S::U32, level);
            let m = self.konst(S::U32, most);
            self.def_hidden(Node::Binary(BinaryOp::Rem, u, m), S::U32)
        };
        let step: u32 = self.rng.random_range(1..3);
        let end = if step == 1 {
            bound
        } else {
            let s = self.konst(S::U32, u64::from(step));
            self.def_hidden(Node::Binary(BinaryOp::Mul, bound, s), S::U32)
        };
        let frame = Frame {
            level,
            is_loop: true,
            taint: Level::Block,
        };
        let n = self.rng.random_range(2..8);
        let exit_first = self.chance(0.5);
        let body = self.nested(frame, n, |g| {
            let k = g.def(Node::ReadVar(counter), S::U32, level);
            // Both spellings of the exit test: `if k >= end { break }` and
            // `if k < end {} else { break }`.
            if exit_first {
                let done = g.def_hidden(Node::Compare(CmpOp::Ge, k, end), S::Bool);
                g.push(Stmt::If {
                    cond: done,
                    then: vec![Stmt::Break],
                    otherwise: Vec::new(),
                });
            } else {
                let more = g.def_hidden(Node::Compare(CmpOp::Lt, k, end), S::Bool);
                g.push(Stmt::If {
                    cond: more,
                    then: Vec::new(),
                    otherwise: vec![Stmt::Break],
                });
            }
            let s = g.konst(S::U32, u64::from(step));
            let next = g.def_hidden(Node::Binary(BinaryOp::Add, k, s), S::U32);
            g.push(Stmt::SetVar(counter, next));
        });
        self.push(Stmt::Loop(body));
    }

    /// `if c { break }` or `if c { continue }` in the innermost loop.
    fn break_or_continue(&mut self) {
        let Some(at) = self.frames.iter().rposition(|f| f.is_loop) else {
            return;
        };
        // Inside an open shared-counter scope, leaving a loop that encloses the scope would
        // skip its closing barrier.
        if self.scope_at.is_some_and(|s| at < s) {
            return;
        }
        let loop_level = self.frames[at].level;
        let is_break = self.chance(0.5);
        let max = if is_break { loop_level } else { Level::Thread };
        let cond = self.cond(max);
        let here = self.ctx().max(self.lv(&[cond]));
        if is_break && here > loop_level {
            return;
        }
        if !is_break {
            let f = &mut self.frames[at];
            f.taint = f.taint.max(here);
        }
        self.push(Stmt::If {
            cond,
            then: vec![if is_break {
                Stmt::Break
            } else {
                Stmt::Continue
            }],
            otherwise: Vec::new(),
        });
    }

    /// `barrier; slot[tid] = v; barrier; r = slot[f(tid)]`.
    fn exchange(&mut self) {
        let ty = self.ty();
        let at = match self.exchanges.iter().position(|e| e.ty == ty) {
            Some(at) => at,
            None if self.exchanges.len() < 3 => {
                self.p.shared.push(Array {
                    elem: ty,
                    len: self.p.block,
                });
                self.exchanges.push(Exchange {
                    array: self.p.shared.len() as u32 - 1,
                    ty,
                    written: false,
                });
                self.exchanges.len() - 1
            }
            None => return,
        };
        let array = self.exchanges[at].array;
        let v = self.pick(ty, Level::Thread);
        self.push(Stmt::Barrier);
        let tid = self.tid;
        self.push(Stmt::Store {
            place: Place::Shared { array, index: tid },
            value: v,
        });
        self.push(Stmt::Barrier);
        self.exchanges[at].written = true;
        self.shared_read(at);
    }

    /// A read of any slot of a written exchange array.
    fn shared_read(&mut self, at: usize) -> Id {
        let Exchange { array, ty, .. } = self.exchanges[at];
        let block = self.p.block;
        let index = match self.rng.random_range(0..4) {
            0 => {
                // A neighbour: (tid + k) % block.
                let k = self.rng.random_range(1..block.max(2));
                let kc = self.konst(S::U32, u64::from(k));
                let s = self.def_hidden(Node::Binary(BinaryOp::Add, self.tid, kc), S::U32);
                let n = self.konst(S::U32, u64::from(block));
                self.def_hidden(Node::Binary(BinaryOp::Rem, s, n), S::U32)
            }
            1 => {
                // The mirror image: block - 1 - tid.
                let last = self.konst(S::U32, u64::from(block - 1));
                self.def_hidden(Node::Binary(BinaryOp::Sub, last, self.tid), S::U32)
            }
            _ => self.index(block, Level::Thread),
        };
        let l = self.lv(&[index]);
        self.def(Node::Load(Place::Shared { array, index }), ty, l)
    }

    /// The operands of a counter update of `family` on `ty`, and, when the counter keeps
    /// its `low` bits, the mask of them (every update of the counter leaves them alone).
    fn counter_operand(
        &mut self,
        (family, low): (Family, Option<u32>),
        ty: ScalarType,
    ) -> (AtomicOp, Id, Option<u64>) {
        if ty.is_float() {
            // A small integer: exact sums in any order.
            let i = self.pick(S::I32, Level::Thread);
            let m = self.konst(S::I32, 15);
            let small = self.def_hidden(Node::Binary(BinaryOp::And, i, m), S::I32);
            let f = self.def_hidden(Node::Cast(small, ty), ty);
            return (AtomicOp::Add, f, None);
        }
        let v = self.pick(ty, Level::Thread);
        let op = match family {
            Family::AddSub if self.chance(0.3) => AtomicOp::Sub,
            Family::AddSub => AtomicOp::Add,
            Family::And => AtomicOp::And,
            Family::Or => AtomicOp::Or,
            Family::Xor => AtomicOp::Xor,
            Family::Min => AtomicOp::Min,
            Family::Max => AtomicOp::Max,
        };
        let Some(k) = low else {
            return (op, v, None);
        };
        let low = (1u64 << k) - 1;
        let shaped = match family {
            Family::AddSub => {
                let kc = self.konst(S::U32, u64::from(k));
                self.def_hidden(Node::Binary(BinaryOp::Shl, v, kc), ty)
            }
            Family::And => {
                let m = self.konst(ty, low);
                self.def_hidden(Node::Binary(BinaryOp::Or, v, m), ty)
            }
            _ => {
                let m = self.konst(ty, !low);
                self.def_hidden(Node::Binary(BinaryOp::And, v, m), ty)
            }
        };
        (op, shaped, Some(low))
    }

    /// An atomic update of counter `j` of `c`, keeping the order-independent bits of the old
    /// value when there are any.
    fn counter_update(&mut self, c: &Counters, j: usize, scope: cuprum_ir::Scope) {
        let (op, value, keep) = self.counter_operand(c.families[j], c.ty);
        let index = self.konst(S::U32, j as u64);
        let place = match c.place {
            CounterPlace::Global(param) => Place::Buffer { param, index },
            CounterPlace::Shared(array) => Place::Shared { array, index },
        };
        let node = Node::Atomic {
            place,
            op,
            scope,
            value,
            compare: None,
        };
        match keep {
            Some(mask) => {
                let old = self.def_hidden(node, c.ty);
                let m = self.konst(c.ty, mask);
                self.def(Node::Binary(BinaryOp::And, old, m), c.ty, Level::Thread);
            }
            None => {
                self.def_hidden(node, c.ty);
            }
        }
    }

    fn global_atomic(&mut self) {
        if self.counters.is_empty() {
            return;
        }
        let i = self.rng.random_range(0..self.counters.len());
        let c = self.counters[i].clone();
        let j = self.rng.random_range(0..c.families.len());
        let scope = if self.chance(0.8) {
            cuprum_ir::Scope::Device
        } else {
            cuprum_ir::Scope::System
        };
        self.counter_update(&c, j, scope);
    }

    fn shared_atomic(&mut self) {
        let Some(c) = self.shared_counters.clone() else {
            return;
        };
        let j = self.rng.random_range(0..c.families.len());
        let scope = if self.chance(0.7) {
            cuprum_ir::Scope::Block
        } else {
            cuprum_ir::Scope::Device
        };
        self.counter_update(&c, j, scope);
    }

    /// `barrier; if tid == 0 { init }; barrier; ..atomics..; barrier; read` on a new
    /// shared counter array.
    fn shared_counter_scope(&mut self) {
        let ty = *[S::U32, S::I32, S::U64, S::I64, S::F32, S::F64]
            .choose(&mut self.rng)
            .unwrap_or(&S::U32);
        let n = self.rng.random_range(1..4);
        let families = (0..n).map(|_| self.family(ty)).collect();
        self.p.shared.push(Array { elem: ty, len: n });
        let array = self.p.shared.len() as u32 - 1;
        let c = Counters {
            place: CounterPlace::Shared(array),
            ty,
            families,
        };
        self.push(Stmt::Barrier);
        let zero = self.konst(S::U32, 0);
        let first = self.def_hidden(Node::Compare(CmpOp::Eq, self.tid, zero), S::Bool);
        self.open.push(Vec::new());
        for j in 0..n {
            let init = if ty.is_float() {
                crate::inputs::small_int(&mut self.rng, ty)
            } else {
                crate::inputs::random_bits(&mut self.rng, ty)
            };
            let v = self.konst(ty, init);
            let index = self.konst(S::U32, u64::from(j));
            self.push(Stmt::Store {
                place: Place::Shared { array, index },
                value: v,
            });
        }
        let then = self.open.pop().unwrap_or_default();
        self.push(Stmt::If {
            cond: first,
            then,
            otherwise: Vec::new(),
        });
        self.push(Stmt::Barrier);
        self.shared_counters = Some(c);
        self.scope_at = Some(self.frames.len());
        let body = self.rng.random_range(3..12);
        self.stmts(body);
        self.scope_at = None;
        self.shared_counters = None;
        self.push(Stmt::Barrier);
        for j in 0..n {
            let index = self.konst(S::U32, u64::from(j));
            self.def(Node::Load(Place::Shared { array, index }), ty, Level::Block);
        }
    }

    fn family(&mut self, ty: ScalarType) -> (Family, Option<u32>) {
        if ty.is_float() {
            return (Family::AddSub, None);
        }
        let f = *[
            Family::AddSub,
            Family::AddSub,
            Family::And,
            Family::Or,
            Family::Xor,
            Family::Min,
            Family::Max,
        ]
        .choose(&mut self.rng)
        .unwrap_or(&Family::AddSub);
        let keeps = !matches!(f, Family::Min | Family::Max) && self.chance(0.5);
        let low = keeps.then(|| self.rng.random_range(1..ty.bits().min(12)));
        (f, low)
    }

    /// Any atomic operation on this thread's own slot of a private buffer.
    fn private_atomic(&mut self) {
        let Some(&(param, ty)) = self.private.choose(&mut self.rng) else {
            return;
        };
        let ops: &[AtomicOp] = if ty.is_float() {
            &[AtomicOp::Add, AtomicOp::Exchange, AtomicOp::CompareExchange]
        } else {
            &[
                AtomicOp::Add,
                AtomicOp::Sub,
                AtomicOp::Min,
                AtomicOp::Max,
                AtomicOp::And,
                AtomicOp::Or,
                AtomicOp::Xor,
                AtomicOp::Exchange,
                AtomicOp::CompareExchange,
            ]
        };
        let op = *ops.choose(&mut self.rng).unwrap_or(&AtomicOp::Add);
        let value = self.operand_for_slot(ty);
        let compare = (op == AtomicOp::CompareExchange).then(|| {
            if self.chance(0.5) {
                // What the slot holds, often: read it first (it is this thread's own).
                let index = self.gid;
                self.def_hidden(Node::Load(Place::Buffer { param, index }), ty)
            } else {
                self.pick(ty, Level::Thread)
            }
        });
        let scope = *[
            cuprum_ir::Scope::Block,
            cuprum_ir::Scope::Device,
            cuprum_ir::Scope::System,
        ]
        .choose(&mut self.rng)
        .unwrap_or(&cuprum_ir::Scope::Device);
        let index = self.gid;
        self.def(
            Node::Atomic {
                place: Place::Buffer { param, index },
                op,
                scope,
                value,
                compare,
            },
            ty,
            Level::Thread,
        );
    }

    /// An operand for a private slot: floats made finite, of magnitude in `[2^-60, 2^60]`
    /// (the slot's sums then never become subnormal, infinite or NaN).
    fn operand_for_slot(&mut self, ty: ScalarType) -> Id {
        let v = self.pick(ty, Level::Thread);
        if !ty.is_float() {
            return v;
        }
        let f = |x: f64| crate::scalar::cast(S::F64, ty, x.to_bits());
        let a = self.def_hidden(Node::Unary(cuprum_ir::UnaryOp::Abs, v), ty);
        let hi = self.konst(ty, f(2f64.powi(60)));
        let lo = self.konst(ty, f(2f64.powi(-60)));
        let below = self.def_hidden(Node::Compare(CmpOp::Le, a, hi), S::Bool);
        let above = self.def_hidden(Node::Compare(CmpOp::Ge, a, lo), S::Bool);
        let ok = self.def_hidden(Node::Binary(BinaryOp::And, below, above), S::Bool);
        let fallback = self.konst(ty, f(1.5));
        self.def_hidden(Node::Select(ok, v, fallback), ty)
    }

    fn local_store(&mut self) {
        let Some((array, ty, len)) = self.local else {
            return;
        };
        let index = self.index(len, Level::Thread);
        let value = self.pick(ty, Level::Thread);
        self.push(Stmt::Store {
            place: Place::Local { array, index },
            value,
        });
    }

    /// `if c { outputs; return }`.
    fn early_return(&mut self) {
        let cond = self.cond(Level::Thread);
        let level = self.lv(&[cond]).max(self.ctx());
        let frame = Frame {
            level,
            is_loop: false,
            taint: Level::Block,
        };
        let then = self.nested(frame, 0, |g| {
            g.outputs_and_hash();
            g.push(Stmt::Return);
        });
        self.push(Stmt::If {
            cond,
            then,
            otherwise: Vec::new(),
        });
        self.exited = true;
    }

    /// A check that may fail: a division by a divisor that may be zero, or a load with an
    /// index that may be out of range.
    fn trap_check(&mut self) {
        if self.trap_divisions {
            let ty = *[S::U32, S::U8, S::U64, S::I32]
                .choose(&mut self.rng)
                .unwrap_or(&S::U32);
            let a = self.pick(ty, Level::Thread);
            let d = self.pick(ty, Level::Thread);
            let d = if ty.is_signed_int() {
                let minus_one = self.konst(ty, u64::MAX);
                let one = self.konst(ty, 1);
                let is_m1 = self.def_hidden(Node::Compare(CmpOp::Eq, d, minus_one), S::Bool);
                self.def_hidden(Node::Select(is_m1, one, d), ty)
            } else {
                d
            };
            self.push(Stmt::Check(Check::Divisor { divisor: d }));
            self.def(Node::Binary(BinaryOp::Div, a, d), ty, Level::Thread);
        } else {
            let Some(&(param, ty, len)) = self.inputs.choose(&mut self.rng) else {
                return;
            };
            // Thread-dependent, so that some threads fall past the end.
            let v = self.pick(S::U32, Level::Thread);
            let u = self.def_hidden(Node::Binary(BinaryOp::Add, self.gid, v), S::U32);
            let past = self.rng.random_range(1..4);
            let n = self.konst(S::U32, u64::from(len + past));
            let index = self.def_hidden(Node::Binary(BinaryOp::Rem, u, n), S::U32);
            self.push(Stmt::Check(Check::Bounds { param, index }));
            self.def(
                Node::Load(Place::Buffer { param, index }),
                ty,
                Level::Thread,
            );
        }
    }

    /// Stores into every output element of this thread, and a hash of the values in scope
    /// into the hash output (the first output).
    fn outputs_and_hash(&mut self) {
        let outputs = self.outputs.clone();
        for &(param, ty) in &outputs[1..] {
            let v = self.pick(ty, Level::Thread);
            let v = self.canonical(v);
            let index = self.gid;
            self.push(Stmt::Store {
                place: Place::Buffer { param, index },
                value: v,
            });
        }
        let mut h = self.konst(S::U64, 0xcbf2_9ce4_8422_2325);
        let k = self.konst(S::U64, 0x100_0000_01b3);
        let mut seen: Vec<Avail> = self
            .pool
            .iter()
            .rev()
            .take(self.cfg.hash_values)
            .copied()
            .collect();
        for var in 0..self.p.vars.len() as u32 {
            let ty = self.p.vars[var as usize];
            let id = self.def_hidden(Node::ReadVar(var), ty);
            seen.push(Avail {
                id,
                ty,
                level: Level::Thread,
            });
        }
        for a in seen {
            let w = self.bits_as_u64(a.id);
            let x = self.def_hidden(Node::Binary(BinaryOp::Xor, h, w), S::U64);
            h = self.def_hidden(Node::Binary(BinaryOp::Mul, x, k), S::U64);
        }
        self.store_wide();
        let (param, _) = outputs[0];
        let index = self.gid;
        self.push(Stmt::Store {
            place: Place::Buffer { param, index },
            value: h,
        });
    }

    /// The bits of `v` as a `U64` (floats made canonical first).
    fn bits_as_u64(&mut self, v: Id) -> Id {
        let ty = self.ty_of(v);
        if ty.is_float() {
            let c = self.canonical(v);
            self.pool.pop();
            let int = match ty.size_bytes() {
                2 => S::U16,
                4 => S::U32,
                _ => S::U64,
            };
            let b = self.def_hidden(Node::Bitcast(c, int), int);
            return if int == S::U64 {
                b
            } else {
                self.def_hidden(Node::Cast(b, S::U64), S::U64)
            };
        }
        if ty == S::U64 {
            return v;
        }
        self.def_hidden(Node::Cast(v, S::U64), S::U64)
    }

    // ---- the kernel ------------------------------------------------------------------

    fn prologue(&mut self, seed: u64) {
        let s = |g: &mut Self, src: Source, level: Level| g.def(Node::Source(src), S::U32, level);
        self.tid = s(self, Source::ThreadIdx, Level::Thread);
        self.lane = s(self, Source::LaneId, Level::Thread);
        self.gid = s(self, Source::GlobalId, Level::Thread);
        let five = self.konst(S::U32, 5);
        self.def(
            Node::Binary(BinaryOp::Shr, self.tid, five),
            S::U32,
            Level::Warp,
        );
        s(self, Source::BlockIdx, Level::Block);
        if self.chance(0.5) {
            s(self, Source::BlockDim, Level::Block);
        }
        if self.chance(0.3) {
            s(self, Source::GridDim, Level::Block);
        }
        let _ = seed;
        // Scalar parameters.
        for _ in 0..self.rng.random_range(1..4) {
            let ty = self.ty();
            self.p.params.push(Param::Scalar(ty));
            let i = self.p.params.len() as u32 - 1;
            self.def(Node::Scalar(i), ty, Level::Block);
        }
        // Inputs, each read at the thread's own position (modulo its length) to start with.
        for _ in 0..self.rng.random_range(1..4) {
            let ty = self.ty();
            let len = *[32, 64, 100, 256, 512].choose(&mut self.rng).unwrap_or(&64);
            self.p.params.push(Param::Buffer {
                elem: ty,
                role: Role::Input { len },
            });
            let param = self.p.params.len() as u32 - 1;
            self.inputs.push((param, ty, len));
            let index = self.index(len, Level::Thread);
            if self.chance(0.5) {
                self.push(Stmt::Check(Check::Bounds { param, index }));
            }
            let l = self.lv(&[index]);
            self.def(Node::Load(Place::Buffer { param, index }), ty, l);
        }
        // Outputs: the hash first, then a few of the palette's types.
        let mut out_types = vec![S::U64];
        for _ in 0..self.rng.random_range(1..4) {
            let ty = self.ty();
            out_types.push(ty);
        }
        if self.chance(0.5) {
            let ty = self.ty();
            let ty = if ty == S::Bool { S::U32 } else { ty };
            let per_thread = *[2, 4].choose(&mut self.rng).unwrap_or(&4);
            self.p.params.push(Param::Buffer {
                elem: ty,
                role: Role::Output { per_thread },
            });
            self.wide = Some((self.p.params.len() as u32 - 1, ty, per_thread));
        }
        for ty in out_types {
            self.p.params.push(Param::Buffer {
                elem: ty,
                role: Role::Output { per_thread: 1 },
            });
            self.outputs.push((self.p.params.len() as u32 - 1, ty));
        }
        // Counters and private slots.
        let atomic_types = [S::U32, S::I32, S::U64, S::I64, S::F32, S::F64];
        for _ in 0..self.rng.random_range(0..3) {
            let ty = *atomic_types.choose(&mut self.rng).unwrap_or(&S::U32);
            let n = self.rng.random_range(1..5);
            self.p.params.push(Param::Buffer {
                elem: ty,
                role: Role::Counters { len: n },
            });
            let param = self.p.params.len() as u32 - 1;
            let families = (0..n).map(|_| self.family(ty)).collect();
            self.counters.push(Counters {
                place: CounterPlace::Global(param),
                ty,
                families,
            });
        }
        for _ in 0..self.rng.random_range(0..3) {
            let ty = *atomic_types.choose(&mut self.rng).unwrap_or(&S::U32);
            self.p.params.push(Param::Buffer {
                elem: ty,
                role: Role::Private,
            });
            self.private.push((self.p.params.len() as u32 - 1, ty));
        }
        // Variables, each written before anything reads it.
        for _ in 0..self.rng.random_range(2..6) {
            let ty = self.ty();
            let level = *[Level::Block, Level::Warp, Level::Thread, Level::Thread]
                .choose(&mut self.rng)
                .unwrap_or(&Level::Thread);
            self.p.vars.push(ty);
            self.var_levels.push(level);
            let v = self.pick(ty, level);
            self.push(Stmt::SetVar(self.p.vars.len() as u32 - 1, v));
        }
        // A local array, every element written first.
        if self.chance(0.6) {
            let ty = self.ty();
            let len = *[2, 4, 8, 5].choose(&mut self.rng).unwrap_or(&4);
            self.p.locals.push(Array { elem: ty, len });
            let array = self.p.locals.len() as u32 - 1;
            for e in 0..len {
                let index = self.konst(S::U32, u64::from(e));
                let value = self.pick(ty, Level::Thread);
                self.push(Stmt::Store {
                    place: Place::Local { array, index },
                    value,
                });
            }
            self.local = Some((array, ty, len));
        }
    }
}

/// The random program of `seed` under `cfg`, called `name`.
pub fn generate(seed: u64, cfg: &Config, name: &str) -> Program {
    let mut rng = SmallRng::seed_from_u64(seed);
    // A palette of the types this kernel computes in: always `u32` and `bool`, plus a few.
    let mut palette = vec![S::U32, S::Bool];
    let extra = rng.random_range(2..6);
    for _ in 0..extra {
        let t = ScalarType::ALL[rng.random_range(0..ScalarType::ALL.len())];
        // `tf32` has no arithmetic to compute in (it is a tensor-core operand type).
        if t != S::Tf32 && !palette.contains(&t) {
            palette.push(t);
        }
    }
    let block = 32 * rng.random_range(1..=cfg.max_warps);
    let grid = rng.random_range(1..=cfg.max_blocks);
    let mut g = Gen {
        rng,
        cfg: cfg.clone(),
        p: Program {
            name: name.to_string(),
            block,
            grid,
            params: Vec::new(),
            shared: Vec::new(),
            locals: Vec::new(),
            vars: Vec::new(),
            types: Vec::new(),
            body: Vec::new(),
            declare_block: false,
        },
        var_levels: Vec::new(),
        counters_vars: Vec::new(),
        open: vec![Vec::new()],
        pool: Vec::new(),
        frames: Vec::new(),
        exited: false,
        scope_at: None,
        budget: cfg.stmts,
        palette,
        tid: 0,
        lane: 0,
        gid: 0,
        inputs: Vec::new(),
        outputs: Vec::new(),
        wide: None,
        private: Vec::new(),
        counters: Vec::new(),
        shared_counters: None,
        exchanges: Vec::new(),
        local: None,
        trap_divisions: false,
    };
    g.p.declare_block = g.chance(0.3);
    g.trap_divisions = g.chance(0.5);
    g.prologue(seed);
    while g.budget > 0 {
        g.budget -= 1;
        g.stmt();
    }
    g.outputs_and_hash();
    g.p.body = g.open.pop().unwrap_or_default();
    g.p
}
