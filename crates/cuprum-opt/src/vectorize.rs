//! 16-byte (and 8-byte) vector accesses to global memory where alignment is proven.
//!
//! A thread that reads `a[j], a[j + 1], a[j + 2], a[j + 3]` of an `f32` slice issues four
//! 4-byte loads; one `ld.global.v4.f32` does the same work in one instruction and one memory
//! transaction per thread, which is how hand-written CUDA (`float4`) reaches full bandwidth.
//! ptxas never merges scalar accesses itself: it cannot know that `&a[j]` is 16-byte aligned.
//! We can, and this pass merges, within one straight-line block:
//!
//! * 2 or 4 global loads of one type (not `bool`) at consecutive element addresses into one
//!   [`Stmt::VectorLoad`], and
//! * 2 or 4 global stores likewise into one [`Stmt::VectorStore`],
//!
//! when the vector (at most 16 bytes) is provably aligned to its size. An address is read as a
//! linear form over `u64` wrapping arithmetic, `c + sum(k_i * x_i)` (through `+`, `-`, `*` and
//! `<<` by constants); the accesses of a group share every term and their constants step by
//! the element size. The first element's address is aligned when every term is (the number
//! of trailing zero bits of `k_i` plus those provable for `x_i`: constants, products, shifts,
//! casts) and so is `c`. Forms and alignment come from the kernel's address analysis
//! ([`cuprum_ir::Addresses`], shared through [`Analyses`]). A slice's base address counts as
//! 16-byte aligned: **slice parameters
//! always point at the start of a device allocation**, which both backends align to 256 bytes
//! (`cuMemAlloc`, and the emulator's `ALLOC_ALIGN`); the runtime refuses a launch with a slice
//! base that is not a multiple of 16 and the emulator refuses it too, so the IR may rely on it
//! (see `ParamKind::Slice`). So `j = 4 * i; a[j + 1]` (byte offset `16 i + 4`) is element 1 of
//! an aligned `f32` vector, wherever `i` comes from, wrapping included.
//!
//! Where the merged access goes, and why the kernel's meaning is unchanged:
//!
//! * Loads: the vector load replaces the group's loads at one of their positions `P`. A load
//!   that moves down to `P` must have no use before `P`; a load that moves up to `P` must not
//!   pass a bounds check or anything else that may stop the thread (it would read before the
//!   check that guards it). Between the first and the last load there is no store that may
//!   write the loaded memory (a store to the same space; none matters for a read-only slice,
//!   which the kernel never writes), and nothing that orders memory: atomics, barriers, fences, async copies,
//!   branches, loops, prints. A load has no effect, so doing it later or earlier, with these
//!   rules, reads the same bits.
//! * Stores: the vector store goes at the last store's position, so every value and the
//!   address are available there. Between the first and the last store there is only
//!   arithmetic that cannot fault, variable reads and writes, accesses to other spaces, and
//!   (for global stores) loads of read-only slices (which no store can alias): nothing can read the stored
//!   elements early, and nothing can stop the thread between the stores (a trap there would
//!   have seen the earlier stores done: memory after a failed launch is observable on the
//!   emulator). So no bounds check may lie between the stores.
//! * Shared memory is the block's and dies with the launch, so a bounds check may lie between
//!   shared stores (a thread that traps there ends the launch; nothing can read what it
//!   stored). Other threads' accesses to it are ordered only by
//!   barriers (and atomics, fences), none of which lies within a group: a thread that could
//!   tell where between them its loads or stores happened would be racing, which the IR
//!   leaves undefined (and the emulator reports).
//!
//! The checks that would sit between the stores of `c[j] = ..; c[j + 1] = ..` are often
//! provably unnecessary: this pass first drops a bounds check `m * i + k < len` (with
//! `k < m`, unsigned) where `i < len / m` holds from a dominating branch (the loop condition
//! of `while i < c.len() / 4 { let j = 4 * i; .. }`): then `m * i + k <= m * (len / m) - m
//! + k < len`, without wrapping. A check that can never fail changes nothing by going.
//!
//! A group needs its vector type to be at most 16 bytes: four `f64` become two pairs.
//! Anything unproven stays scalar.

use std::collections::{BTreeMap, HashMap};

use cuprum_ir::{
    AddressSpace, Addresses, BinaryOp, Block, CmpOp, Eviction, Kernel, Op, ParamKind, Root,
    ScalarType, SliceAccess, Stmt, Value,
};

use crate::analyses::Analyses;
use crate::facts::{Defs, Facts};
use crate::ir::{always_exits, check_cond, compact, is_line_info};

/// Largest vector access, in bytes.
const MAX_VECTOR_BYTES: u32 = 16;

/// The spaces whose accesses are merged: global memory, and the block's shared memory (a
/// `float4` element staged in a shared tile, read back by every thread, as CUDA's
/// `ld.shared.v4`). Local arrays mostly become registers (`promote`) and stay scalar.
const VECTOR_SPACES: [AddressSpace; 2] = [AddressSpace::Global, AddressSpace::Shared];

/// Runs the pass; true if the kernel changed.
pub fn run(kernel: &mut Kernel) -> bool {
    run_with(kernel, &mut Analyses::new())
}

/// [`run`], taking the kernel's definitions and address analysis from `analyses` (and
/// returning them there when nothing changed).
pub fn run_with(kernel: &mut Kernel, analyses: &mut Analyses) -> bool {
    let defs = analyses.take_defs(kernel);
    let addresses = analyses.take_addresses(kernel);
    // `len / m` (or `len >> log2 m`) values, by their dividend: `(quotient, m)`.
    let mut quotients: HashMap<Value, Vec<(Value, u64)>> = HashMap::new();
    // `x < q` comparisons, by `(x, q)`; `q > x` too.
    let mut less: HashMap<(Value, Value), Vec<Value>> = HashMap::new();
    for (v, _) in kernel.values.iter() {
        match defs.op(v) {
            Some(&Op::Binary(BinaryOp::Div, l, r)) if defs.ty(l) == ScalarType::U64 => {
                if let Some(m) = defs.konst(r).filter(|&m| m > 0) {
                    quotients
                        .entry(addresses.canonical(l))
                        .or_default()
                        .push((v, m));
                }
            }
            Some(&Op::Binary(BinaryOp::Shr, l, r)) if defs.ty(l) == ScalarType::U64 => {
                if let Some(s) = defs.konst(r) {
                    quotients
                        .entry(addresses.canonical(l))
                        .or_default()
                        .push((v, 1u64 << (s % 64)));
                }
            }
            Some(&Op::Compare(CmpOp::Lt, x, q)) | Some(&Op::Compare(CmpOp::Gt, q, x))
                if defs.ty(x) == ScalarType::U64 =>
            {
                less.entry((x, q)).or_default().push(v);
            }
            _ => {}
        }
    }
    let read_only = kernel
        .params
        .iter()
        .map(|p| {
            matches!(
                p.kind,
                ParamKind::Slice {
                    access: SliceAccess::ReadOnly,
                    ..
                }
            )
        })
        .collect();
    let mut w = Walker {
        defs,
        addresses,
        quotients,
        less,
        read_only,
        facts: Facts::default(),
        changed: false,
    };
    let mut body = std::mem::take(&mut kernel.body);
    w.block(&mut body);
    kernel.body = body;
    if w.changed {
        compact(kernel);
    } else {
        analyses.keep_defs(w.defs);
        analyses.keep_addresses(w.addresses);
    }
    w.changed
}

struct Walker {
    defs: Defs,
    addresses: Addresses,
    quotients: HashMap<Value, Vec<(Value, u64)>>,
    less: HashMap<(Value, Value), Vec<Value>>,
    /// Whether each parameter is a read-only slice.
    read_only: Vec<bool>,
    facts: Facts,
    changed: bool,
}

/// A global access of the block being vectorized.
#[derive(Clone, Copy)]
struct Access {
    pos: usize,
    /// The loaded value, or the stored value.
    value: Value,
    addr: Value,
    offset: u64,
}

/// A global access's address, split: `terms` shared by a group, `offset` its own constant.
struct Address {
    terms: Vec<(Value, u64)>,
    offset: u64,
    /// The slice parameter the address is based on (one base, coefficient 1), if any.
    slice: Option<u32>,
}

impl Walker {
    fn block(&mut self, block: &mut Block) {
        let mark = self.facts.mark();
        let stmts = std::mem::take(&mut block.stmts);
        block.stmts.reserve(stmts.len());
        for mut stmt in stmts {
            let drop = match &mut stmt {
                s if check_cond(s).is_some_and(|c| self.proven(c)) => true,
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let cond = *cond;
                    let m = self.facts.mark();
                    self.facts.assume(&self.defs, cond, true);
                    self.block(then);
                    self.facts.undo(m);
                    self.facts.assume(&self.defs, cond, false);
                    self.block(otherwise);
                    self.facts.undo(m);
                    let (t, e) = (always_exits(then), always_exits(otherwise));
                    if e && !t {
                        self.facts.assume(&self.defs, cond, true);
                    } else if t && !e {
                        self.facts.assume(&self.defs, cond, false);
                    }
                    false
                }
                Stmt::Loop { body } => {
                    self.block(body);
                    false
                }
                _ => false,
            };
            if drop {
                self.changed = true;
            } else {
                block.stmts.push(stmt);
            }
        }
        self.facts.undo(mark);
        while self.merge_once(block) {
            self.changed = true;
        }
    }

    /// Whether `cond` is `m * i + k < len` with `k < m` and `i < len / m` known here.
    fn proven(&self, cond: Value) -> bool {
        let Some(&Op::Compare(CmpOp::Lt, index, len)) = self.defs.op(cond) else {
            return false;
        };
        if self.defs.ty(index) != ScalarType::U64 {
            return false;
        }
        // `index` = `m * i + k`.
        let lin = self.addresses.linear(index);
        let Some((i, m)) = lin.single_term() else {
            return false;
        };
        let k = lin.constant();
        if k >= m {
            return false;
        }
        let Some(qs) = self.quotients.get(&self.addresses.canonical(len)) else {
            return false;
        };
        qs.iter().any(|&(q, d)| {
            d == m
                && self
                    .less
                    .get(&(i, q))
                    .is_some_and(|cs| cs.iter().any(|&c| self.facts.known(c) == Some(true)))
        })
    }

    /// A global access's address as a linear form, and the slice it is based on.
    fn address(&self, addr: Value) -> Address {
        let lin = self.addresses.linear(addr);
        let slice = match self.addresses.root(addr) {
            Some(Root::Slice(p)) => Some(p),
            _ => None,
        };
        Address {
            terms: lin.terms().to_vec(),
            offset: lin.constant(),
            slice,
        }
    }

    /// Whether the terms of a linear form are all multiples of `2^bits`.
    fn terms_aligned(&self, terms: &[(Value, u64)], bits: u32) -> bool {
        terms
            .iter()
            .all(|&(x, k)| k.trailing_zeros().min(64) + self.addresses.align_bits(x) >= bits)
    }

    /// Finds one group of the block to merge and merges it; false when there is none.
    fn merge_once(&self, block: &mut Block) -> bool {
        // Candidates: (is_store, space, eviction, type, terms) -> accesses (loads with
        // different eviction hints stay apart).
        type Key = (bool, AddressSpace, Eviction, ScalarType, Vec<(Value, u64)>);
        let mut groups: BTreeMap<Key, Vec<Access>> = BTreeMap::new();
        let mut slices: HashMap<Key, Option<u32>> = HashMap::new();
        for (pos, s) in block.stmts.iter().enumerate() {
            let (store, space, eviction, ty, addr, value) = match s {
                Stmt::Def {
                    value,
                    op:
                        Op::Load {
                            space,
                            ty,
                            addr,
                            eviction,
                        },
                } => (false, *space, *eviction, *ty, *addr, *value),
                Stmt::Store { space, addr, value } => (
                    true,
                    *space,
                    Eviction::Normal,
                    self.defs.ty(*value),
                    *addr,
                    *value,
                ),
                _ => continue,
            };
            if ty == ScalarType::Bool || !VECTOR_SPACES.contains(&space) {
                continue;
            }
            let a = self.address(addr);
            let key = (store, space, eviction, ty, a.terms);
            slices.insert(key.clone(), a.slice);
            groups.entry(key).or_default().push(Access {
                pos,
                value,
                addr,
                offset: a.offset,
            });
        }
        for (key, accesses) in &groups {
            let (store, space, eviction, ty, terms) = key;
            let size = u64::from(ty.size_bytes());
            let slice = slices.get(key).copied().flatten();
            for lanes in [4u64, 2] {
                let bytes = lanes * size;
                if bytes > u64::from(MAX_VECTOR_BYTES)
                    || !self.terms_aligned(terms, bytes.trailing_zeros())
                {
                    continue;
                }
                for first in accesses {
                    if first.offset % bytes != 0 {
                        continue;
                    }
                    let mut members = Vec::with_capacity(lanes as usize);
                    for k in 0..lanes {
                        let want = first.offset.wrapping_add(k * size);
                        match accesses.iter().find(|a| a.offset == want) {
                            Some(a) => members.push(*a),
                            None => break,
                        }
                    }
                    if members.len() != lanes as usize {
                        continue;
                    }
                    let done = if *store {
                        self.merge_stores(block, *space, &members)
                    } else {
                        let ro = *space == AddressSpace::Global
                            && slice.is_some_and(|p| self.is_read_only(p));
                        self.merge_loads(block, *space, *eviction, *ty, &members, ro)
                    };
                    if done {
                        return true;
                    }
                }
            }
        }
        false
    }

    fn is_read_only(&self, param: u32) -> bool {
        self.read_only.get(param as usize).copied().unwrap_or(false)
    }

    /// Merges the loads `members` (in address order) if the rules allow it somewhere.
    fn merge_loads(
        &self,
        block: &mut Block,
        space: AddressSpace,
        eviction: Eviction,
        ty: ScalarType,
        members: &[Access],
        read_only: bool,
    ) -> bool {
        let mut by_pos: Vec<Access> = members.to_vec();
        by_pos.sort_by_key(|a| a.pos);
        let (lo, hi) = (by_pos[0].pos, by_pos[by_pos.len() - 1].pos);
        let is_member = |p: usize| by_pos.iter().any(|a| a.pos == p);
        // Nothing between the first and the last load may order or write the memory.
        for p in lo + 1..hi {
            if is_member(p) {
                continue;
            }
            match self.between_loads(&block.stmts[p], space, read_only) {
                Between::Fine | Between::Check => {}
                Between::Blocks => return false,
            }
        }
        let addr0 = members[0].addr;
        'placement: for at in by_pos.iter().map(|a| a.pos) {
            // The first element's address must be defined before `at`.
            if (at..members[0].pos).any(|p| defines(&block.stmts[p], addr0)) {
                continue;
            }
            for a in &by_pos {
                if a.pos < at {
                    // Moves down: no use of its value up to `at`.
                    if (a.pos + 1..=at).any(|p| uses(&block.stmts[p], a.value)) {
                        continue 'placement;
                    }
                } else if a.pos > at {
                    // Moves up: no check (or anything else that stops the thread) passed.
                    for p in at + 1..a.pos {
                        if !is_member(p)
                            && self.between_loads(&block.stmts[p], space, read_only)
                                != Between::Fine
                        {
                            continue 'placement;
                        }
                    }
                }
            }
            let vector = Stmt::VectorLoad {
                space,
                ty,
                addr: addr0,
                d: members.iter().map(|a| a.value).collect(),
                eviction,
            };
            replace(block, &by_pos, at, vector);
            return true;
        }
        false
    }

    /// Merges the stores `members` (in address order) at the last one's position if the
    /// rules allow it.
    fn merge_stores(&self, block: &mut Block, space: AddressSpace, members: &[Access]) -> bool {
        let mut by_pos: Vec<Access> = members.to_vec();
        by_pos.sort_by_key(|a| a.pos);
        let (lo, hi) = (by_pos[0].pos, by_pos[by_pos.len() - 1].pos);
        for p in lo + 1..hi {
            if by_pos.iter().any(|a| a.pos == p) {
                continue;
            }
            if !self.between_stores(&block.stmts[p], space) {
                return false;
            }
        }
        let vector = Stmt::VectorStore {
            space,
            addr: members[0].addr,
            values: members.iter().map(|a| a.value).collect(),
        };
        replace(block, &by_pos, hi, vector);
        true
    }

    /// Whether a definition by `op` has no effect and cannot fault.
    fn harmless(&self, op: &Op) -> bool {
        self.defs.is_removable(op) || matches!(op, Op::Shuffle { .. } | Op::Vote { .. })
    }

    /// What `s`, between two loads of a group from `space`, means for moving them.
    fn between_loads(&self, s: &Stmt, space: AddressSpace, read_only: bool) -> Between {
        if let Stmt::Def { op, .. } = s
            && self.harmless(op)
        {
            return Between::Fine;
        }
        match s.access() {
            // Other loads; stores the loads cannot see (read-only data, another space).
            Some(a) if !a.atomic => {
                if a.reads || read_only || a.space != space {
                    Between::Fine
                } else {
                    Between::Blocks
                }
            }
            // Line information is no code: accesses merge across it.
            _ if matches!(s, Stmt::WriteVar { .. }) || is_line_info(s) => Between::Fine,
            _ if check_cond(s).is_some() => Between::Check,
            _ => Between::Blocks,
        }
    }

    /// Whether `s` may lie between two stores of a group to `space`.
    fn between_stores(&self, s: &Stmt, space: AddressSpace) -> bool {
        match s.access() {
            // Loads the stores cannot change, and stores to another space.
            Some(a) if !a.atomic => {
                a.space != space
                    || (space == AddressSpace::Global
                        && a.reads
                        && self
                            .address(a.addr)
                            .slice
                            .is_some_and(|p| self.is_read_only(p)))
            }
            Some(_) => false,
            None => match s {
                Stmt::Def { op, .. } => self.harmless(op),
                Stmt::WriteVar { .. } => true,
                _ if is_line_info(s) => true,
                // A trap ends the launch, and shared memory with it: no one can see which of
                // a thread's shared stores were done.
                _ if space == AddressSpace::Shared => check_cond(s).is_some(),
                _ => false,
            },
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Between {
    /// Anything may move past it.
    Fine,
    /// A bounds check (or other trap): a load may move down past it, not up.
    Check,
    /// Nothing may move past it.
    Blocks,
}

fn defines(s: &Stmt, v: Value) -> bool {
    let mut found = false;
    s.results().iter().for_each(|&d| found |= d == v);
    found
}

/// Whether `s` (or a statement nested in it) reads `v`.
fn uses(s: &Stmt, v: Value) -> bool {
    let mut found = false;
    s.for_each_operand(|x| found |= x == v);
    if found {
        return true;
    }
    match s {
        Stmt::If {
            then, otherwise, ..
        } => then
            .stmts
            .iter()
            .chain(&otherwise.stmts)
            .any(|s| uses(s, v)),
        Stmt::Loop { body } => body.stmts.iter().any(|s| uses(s, v)),
        _ => false,
    }
}

/// Puts `vector` at position `at` and drops the other accesses of `members`.
fn replace(block: &mut Block, members: &[Access], at: usize, vector: Stmt) {
    let old = std::mem::take(&mut block.stmts);
    block.stmts = old
        .into_iter()
        .enumerate()
        .filter_map(|(p, s)| {
            if p == at {
                Some(vector.clone())
            } else if members.iter().any(|a| a.pos == p) {
                None
            } else {
                Some(s)
            }
        })
        .collect();
}
