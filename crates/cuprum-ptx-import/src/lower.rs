//! The kernels `syntax` read, as cuprum's kernel IR: each register a variable, each
//! instruction the IR operations that compute what the PTX ISA says it computes, and the
//! branches a loop over the basic blocks (see the crate docs).

use std::collections::HashMap;

use cuprum_ir::{
    AddressSpace, ArrayDecl, AtomicOp, BinaryOp, BuildError, CmpOp, Constant, Dim, Eviction,
    Kernel, KernelBuilder, MemOrder, Op, ParamKind, ScalarType as S, Scope, Special, Stmt,
    TernaryOp, UnaryOp, Value, Var,
};

use crate::ImportError;
use crate::syntax::{Entry, Inst, Item, Operand, parse_int};

type R<T> = Result<T, ImportError>;

/// The element type a PTX type word names (`.u32`, `.f16`, `.pred`).
pub(crate) fn elem_type(word: &str) -> Option<S> {
    Some(match word {
        ".pred" => S::Bool,
        ".b8" | ".u8" => S::U8,
        ".s8" => S::I8,
        ".b16" | ".u16" => S::U16,
        ".s16" => S::I16,
        ".b32" | ".u32" => S::U32,
        ".s32" => S::I32,
        ".b64" | ".u64" => S::U64,
        ".s64" => S::I64,
        ".f16" => S::F16,
        ".bf16" => S::BF16,
        ".f32" => S::F32,
        ".f64" => S::F64,
        _ => return None,
    })
}

/// The unsigned type of `bytes` bytes (what registers hold: bits).
fn bits_type(bytes: u32) -> S {
    match bytes {
        1 => S::U8,
        2 => S::U16,
        4 => S::U32,
        _ => S::U64,
    }
}

/// A memory symbol: a static shared array, the dynamic shared memory, or a local array.
#[derive(Clone, Copy)]
enum SharedSym {
    Static(u32),
    Dynamic,
    Local(u32),
}

/// Where a PTX parameter is among the IR's: one scalar, or an array of bytes (a struct
/// passed by value), one `U8` parameter per byte.
#[derive(Clone, Copy)]
enum ParamLoc {
    Scalar(u32),
    Bytes { first: u32, count: u32 },
}

/// Where block `i` of a kernel goes when it ends.
enum Exit {
    /// To the next block (or out of the kernel after the last).
    Fall,
    /// `bra`: to the label, when the guard (if any) holds.
    Branch {
        target: u32,
        guard: Option<(String, bool)>,
    },
    /// `ret`/`exit`, when the guard (if any) holds.
    Return { guard: Option<(String, bool)> },
}

struct Lowerer {
    b: KernelBuilder,
    regs: HashMap<String, Var>,
    params: HashMap<String, ParamLoc>,
    shared: HashMap<String, SharedSym>,
    line: usize,
}

/// Lowers one entry, with the module's shared arrays.
pub(crate) fn kernel(entry: &Entry, module_shared: &[Item]) -> R<Kernel> {
    let mut l = Lowerer {
        b: KernelBuilder::new(entry.name.clone()),
        regs: HashMap::new(),
        params: HashMap::new(),
        shared: HashMap::new(),
        line: entry.line,
    };
    for p in &entry.params {
        l.line = p.line;
        let ty = elem_type(&p.ty)
            .filter(|t| *t != S::Bool)
            .ok_or_else(|| l.err(format!("parameter `{}` of type {}", p.name, p.ty)))?;
        let loc = match p.count {
            None => ParamLoc::Scalar(l.b.param(p.name.clone(), ParamKind::Scalar(ty))),
            Some(n) => {
                let count = n * ty.size_bytes();
                let first = l.b.kernel().params.len() as u32;
                for k in 0..count {
                    l.b.param(format!("{}_byte{k}", p.name), ParamKind::Scalar(S::U8));
                }
                ParamLoc::Bytes { first, count }
            }
        };
        l.params.insert(p.name.clone(), loc);
    }
    if let Some(block) = entry.reqntid {
        l.b.set_block(Some(block));
    }
    l.line = entry.line;
    for item in module_shared.iter().chain(&entry.body) {
        match item {
            Item::Reg { ty, names } => {
                let t = elem_type(ty).ok_or_else(|| l.err(format!("registers of type {ty}")))?;
                let vt = if t == S::Bool {
                    S::Bool
                } else {
                    bits_type(t.size_bytes())
                };
                for n in names {
                    let v = l.b.var(n.clone(), vt);
                    l.regs.insert(n.clone(), v);
                }
            }
            Item::Shared {
                ty,
                name,
                len,
                align,
                dynamic,
                local,
            } => {
                let elem = elem_type(ty)
                    .filter(|t| *t != S::Bool)
                    .ok_or_else(|| l.err(format!("shared array `{name}` of type {ty}")))?;
                let align = (*align).max(elem.size_bytes()).max(1);
                let sym = if *local {
                    // A thread's array of bytes, as elements of its alignment so that every
                    // access the alignment allows is aligned in the IR too.
                    let bytes = len * elem.size_bytes();
                    let unit = [8u32, 4, 2, 1]
                        .into_iter()
                        .find(|&u| align.is_multiple_of(u) && bytes.is_multiple_of(u))
                        .unwrap_or(1);
                    let decl = ArrayDecl {
                        name: name.clone(),
                        elem: bits_type(unit),
                        len: bytes / unit,
                    };
                    SharedSym::Local(l.b.local_array(decl))
                } else if *dynamic {
                    l.b.align_dyn_shared(align);
                    SharedSym::Dynamic
                } else {
                    let decl = ArrayDecl {
                        name: name.clone(),
                        elem,
                        len: *len,
                    };
                    SharedSym::Static(l.b.shared_array_aligned(decl, align))
                };
                l.shared.insert(name.clone(), sym);
            }
            Item::Label(_) | Item::Inst(_) => {}
        }
    }
    // Basic blocks: a label starts one, and so does whatever follows a branch or a return.
    let mut blocks: Vec<Vec<&Inst>> = vec![Vec::new()];
    let mut labels = HashMap::new();
    for item in &entry.body {
        match item {
            Item::Label(name) => {
                if !blocks.last().is_some_and(Vec::is_empty) {
                    blocks.push(Vec::new());
                }
                labels.insert(name.clone(), (blocks.len() - 1) as u32);
            }
            Item::Inst(inst) => {
                let ends = matches!(base(&inst.opcode), "bra" | "ret" | "exit");
                if let Some(block) = blocks.last_mut() {
                    block.push(inst);
                }
                if ends {
                    blocks.push(Vec::new());
                }
            }
            _ => {}
        }
    }
    let exits: Vec<Exit> = blocks
        .iter()
        .map(|insts| match insts.last() {
            Some(last) if base(&last.opcode) == "bra" => {
                let Some(Operand::Name(target)) = last.operands.first() else {
                    return Err(ImportError::new(last.line, "a branch without a label"));
                };
                let target = *labels.get(target).ok_or_else(|| {
                    ImportError::new(last.line, format!("no label `{target}` in the kernel"))
                })?;
                Ok(Exit::Branch {
                    target,
                    guard: last.guard.clone(),
                })
            }
            Some(last) if matches!(base(&last.opcode), "ret" | "exit") => Ok(Exit::Return {
                guard: last.guard.clone(),
            }),
            _ => Ok(Exit::Fall),
        })
        .collect::<R<_>>()?;
    let straight = blocks.len() <= 2
        && blocks.get(1).is_none_or(Vec::is_empty)
        && !matches!(exits[0], Exit::Branch { .. });
    if straight {
        // One block: no dispatch loop.
        for inst in body(&blocks[0], &exits[0]) {
            l.inst(inst)?;
        }
        if let Exit::Return { guard: Some(g) } = &exits[0] {
            let cond = l.guard(g)?;
            l.when(cond, |l| {
                l.b.push(Stmt::Return);
                Ok(())
            })?;
        }
    } else {
        l.dispatch(&blocks, &exits)?;
    }
    Ok(l.b.finish())
}

/// The instructions of a block but its last, when that is its exit (a branch or a return).
fn body<'a, 'b>(insts: &'a [&'b Inst], exit: &Exit) -> &'a [&'b Inst] {
    match exit {
        Exit::Fall => insts,
        _ => &insts[..insts.len() - 1],
    }
}

/// The opcode's first part (`ld` of `ld.global.f32`).
fn base(opcode: &str) -> &str {
    opcode.split('.').next().unwrap_or(opcode)
}

impl Lowerer {
    /// The blocks in one loop: each pass runs, for the lanes at it, the first block in
    /// `order`'s turns that a lane of the warp is at, and the loops' latches send their
    /// lanes on to the header together (see the crate docs).
    fn dispatch(&mut self, blocks: &[Vec<&Inst>], exits: &[Exit]) -> R<()> {
        let successors: Vec<Vec<usize>> = exits
            .iter()
            .enumerate()
            .map(|(i, exit)| {
                let next = (i + 1 < blocks.len()).then_some(i + 1);
                match exit {
                    Exit::Fall | Exit::Return { guard: Some(_) } => next.into_iter().collect(),
                    Exit::Branch {
                        target,
                        guard: None,
                    } => vec![*target as usize],
                    Exit::Branch {
                        target,
                        guard: Some(_),
                    } => std::iter::once(*target as usize).chain(next).collect(),
                    Exit::Return { guard: None } => Vec::new(),
                }
            })
            .collect();
        let order = crate::order::order(&successors);
        let pc = self.b.var("%pc", S::U32);
        let zero = self.konst(S::U32, 0);
        self.b.push(Stmt::WriteVar {
            var: pc,
            value: zero,
        });
        self.b.begin_block();
        let here = self.def(Op::ReadVar(pc))?;
        let first = self.warp_min(here, order.count)?;
        for (&header, &turn) in &order.latch {
            self.turn([first, here], turn, |l| l.set_pc(pc, order.rank[header]))?;
        }
        for (i, (insts, exit)) in blocks.iter().zip(exits).enumerate() {
            self.turn([first, here], order.rank[i], |l| {
                for inst in body(insts, exit) {
                    l.inst(inst)?;
                }
                l.leave(pc, exit, [i, blocks.len()], &order)
            })?;
        }
        let body = self.b.end_block();
        self.b.push(Stmt::Loop { body });
        Ok(())
    }

    /// Block `i` (of `count`) ending by `exit`: the lane's next turn, or its end.
    fn leave(
        &mut self,
        pc: Var,
        exit: &Exit,
        [i, count]: [usize; 2],
        order: &crate::order::Order,
    ) -> R<()> {
        let next = i + 1;
        let ranked = |b: usize| order.target(i, b);
        let end = |l: &mut Self| {
            l.b.push(Stmt::Return);
            Ok(())
        };
        match exit {
            Exit::Fall if next >= count => end(self),
            Exit::Fall => self.set_pc(pc, ranked(next)),
            Exit::Branch {
                target,
                guard: None,
            } => self.set_pc(pc, ranked(*target as usize)),
            Exit::Branch {
                target,
                guard: Some(g),
            } => {
                let taken = self.guard(g)?;
                if next >= count {
                    // Not taken, the lane runs off the kernel's end.
                    let off = self.def(Op::Unary(UnaryOp::Not, taken))?;
                    self.when(off, end)?;
                    self.set_pc(pc, ranked(*target as usize))
                } else {
                    let t = self.konst(S::U32, u64::from(ranked(*target as usize)));
                    let f = self.konst(S::U32, u64::from(ranked(next)));
                    let to = self.select(taken, t, f)?;
                    self.b.push(Stmt::WriteVar { var: pc, value: to });
                    Ok(())
                }
            }
            Exit::Return { guard: None } => end(self),
            Exit::Return { guard: Some(g) } => {
                let cond = self.guard(g)?;
                self.when(cond, end)?;
                if next >= count {
                    end(self)
                } else {
                    self.set_pc(pc, ranked(next))
                }
            }
        }
    }

    /// `body` for the lanes where `cond` holds.
    fn when(&mut self, cond: Value, body: impl FnOnce(&mut Self) -> R<()>) -> R<()> {
        self.b.begin_block();
        body(self)?;
        let then = self.b.end_block();
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise: Default::default(),
        });
        Ok(())
    }

    /// `body` in the pass where `turn` is the warp's `first`, for the lanes whose block
    /// counter (`here`) is at it.
    fn turn(
        &mut self,
        [first, here]: [Value; 2],
        turn: u32,
        body: impl FnOnce(&mut Self) -> R<()>,
    ) -> R<()> {
        let me = self.konst(S::U32, u64::from(turn));
        let its_turn = self.cmp(CmpOp::Eq, first, me)?;
        self.when(its_turn, |l| {
            let mine = l.cmp(CmpOp::Eq, here, me)?;
            l.when(mine, body)
        })
    }

    fn err(&self, message: impl Into<String>) -> ImportError {
        ImportError::new(self.line, message)
    }

    fn unsupported(&self, what: impl std::fmt::Display) -> ImportError {
        self.err(format!(
            "{what} is not imported (the emulator runs a subset of PTX: see cuprum-ptx-import's \
             docs; run on a GPU for the rest)"
        ))
    }

    fn built(&self, e: BuildError) -> ImportError {
        self.err(format!("an ill-typed instruction: {}", String::from(e)))
    }

    fn def(&mut self, op: Op) -> R<Value> {
        self.b.def(op).map_err(|e| self.built(e))
    }

    fn konst(&mut self, ty: S, bits: u64) -> Value {
        self.b.constant(Constant::new(ty, bits))
    }

    fn bin(&mut self, op: BinaryOp, a: Value, c: Value) -> R<Value> {
        self.def(Op::Binary(op, a, c))
    }

    fn cmp(&mut self, op: CmpOp, a: Value, c: Value) -> R<Value> {
        self.def(Op::Compare(op, a, c))
    }

    fn select(&mut self, cond: Value, t: Value, f: Value) -> R<Value> {
        self.b.select(cond, t, f).map_err(|e| self.built(e))
    }

    /// The least `pc` (below `count`) of the warp's active lanes, the same in each: one
    /// vote per bit, from the highest.
    fn warp_min(&mut self, pc: Value, count: u32) -> R<Value> {
        let bits = u32::BITS - count.saturating_sub(1).leading_zeros();
        let mut least = self.konst(S::U32, 0);
        for b in (0..bits).rev() {
            let step = self.konst(S::U32, 1 << b);
            let candidate = self.bin(BinaryOp::Add, least, step)?;
            let below = self.cmp(CmpOp::Lt, pc, candidate)?;
            let any = self.def(Op::Vote {
                mode: cuprum_ir::VoteMode::Any,
                pred: below,
            })?;
            least = self.select(any, least, candidate)?;
        }
        Ok(least)
    }

    fn set_pc(&mut self, pc: Var, to: u32) -> R<()> {
        let v = self.konst(S::U32, u64::from(to));
        self.b.push(Stmt::WriteVar { var: pc, value: v });
        Ok(())
    }

    /// `value`'s bits as type `to`: reinterpreted where the sizes agree, else truncated or
    /// zero-extended as bits (how PTX reads a register wider or narrower than the
    /// instruction's type).
    fn convert_bits(&mut self, value: Value, to: S) -> R<Value> {
        let from = self.b.type_of(value);
        if from == to {
            return Ok(value);
        }
        if from == S::Bool || to == S::Bool {
            return Err(self.err(format!("a {from} where a {to} is expected")));
        }
        if from.size_bytes() == to.size_bytes() {
            return self.b.bitcast(value, to).map_err(|e| self.built(e));
        }
        let bits = self
            .b
            .bitcast(value, bits_type(from.size_bytes()))
            .map_err(|e| self.built(e))?;
        let resized = self
            .b
            .cast(bits, bits_type(to.size_bytes()))
            .map_err(|e| self.built(e))?;
        self.b.bitcast(resized, to).map_err(|e| self.built(e))
    }

    fn reg(&self, name: &str) -> R<Var> {
        self.regs
            .get(name)
            .copied()
            .ok_or_else(|| self.err(format!("`{name}` is not a declared register")))
    }

    /// Writes `value` to register `name` (converted to the register's bits). A narrower
    /// value is extended as PTX extends it into a wider register: by its sign where its type
    /// is a signed integer (`ld.param.s16` into a `.b32` register), with zeros otherwise.
    fn set(&mut self, name: &str, value: Value) -> R<()> {
        let var = self.reg(name)?;
        let vt = self.b.kernel().vars[var].ty;
        let from = self.b.type_of(value);
        let value = if from.is_signed_int() && from.size_bytes() < vt.size_bytes() {
            let wide = match vt.size_bytes() {
                2 => S::I16,
                4 => S::I32,
                _ => S::I64,
            };
            self.b.cast(value, wide).map_err(|e| self.built(e))?
        } else {
            value
        };
        let value = self.convert_bits(value, vt)?;
        self.b.push(Stmt::WriteVar { var, value });
        Ok(())
    }

    /// The guard's value (`!p` negated).
    fn guard(&mut self, (name, negated): &(String, bool)) -> R<Value> {
        let p = self.read(&Operand::Name(name.clone()), S::Bool)?;
        if *negated {
            self.def(Op::Unary(UnaryOp::Not, p))
        } else {
            Ok(p)
        }
    }

    /// An operand's value as type `ty`: a register, a special register, a shared symbol's
    /// address, or a number.
    fn read(&mut self, op: &Operand, ty: S) -> R<Value> {
        match op {
            Operand::Name(name) => {
                if let Some(&var) = self.regs.get(name) {
                    let v = self.def(Op::ReadVar(var))?;
                    return self.convert_bits(v, ty);
                }
                if let Some(special) = special(name) {
                    let v = match special {
                        Some(s) => self.def(Op::Special(s))?,
                        None => self.konst(S::U32, 32),
                    };
                    return self.int_resize(v, ty);
                }
                if let Some(&sym) = self.shared.get(name) {
                    let addr = self.shared_base(sym)?;
                    return self.int_resize(addr, ty);
                }
                Err(self.err(format!(
                    "`{name}` is not a register, a special register or a shared array"
                )))
            }
            Operand::Not(name) => {
                let p = self.read(&Operand::Name(name.clone()), S::Bool)?;
                if ty != S::Bool {
                    return Err(self.err(format!("`!{name}` where a {ty} is expected")));
                }
                self.def(Op::Unary(UnaryOp::Not, p))
            }
            Operand::Number(text) => {
                let bits = number_bits(text, ty)
                    .ok_or_else(|| self.err(format!("`{text}` is not a {ty}")))?;
                Ok(self.konst(ty, bits))
            }
            other => Err(self.err(format!("{other:?} where a value is expected"))),
        }
    }

    /// An unsigned index value (a special register, an address) as `ty`.
    fn int_resize(&mut self, v: Value, ty: S) -> R<Value> {
        let bits = self
            .b
            .cast(v, bits_type(ty.size_bytes()))
            .map_err(|e| self.built(e))?;
        self.convert_bits(bits, ty)
    }

    fn shared_base(&mut self, sym: SharedSym) -> R<Value> {
        match sym {
            SharedSym::Static(i) => self.def(Op::SharedAddr(i)),
            SharedSym::Dynamic => self.def(Op::DynSharedAddr),
            SharedSym::Local(i) => self.def(Op::LocalAddr(i)),
        }
    }

    /// The address an `[..]` operand names in `space` (`U64` global, `U32` shared).
    fn address(&mut self, op: &Operand, space: AddressSpace) -> R<Value> {
        let Operand::Address { base, offset } = op else {
            return Err(self.err(format!("{op:?} where an address `[..]` is expected")));
        };
        let at = space.address_type();
        let start = match base {
            None => self.konst(at, 0),
            Some(name) => match self.shared.get(name).copied() {
                Some(sym @ SharedSym::Local(_)) if space == AddressSpace::Local => {
                    self.shared_base(sym)?
                }
                Some(sym @ (SharedSym::Static(_) | SharedSym::Dynamic))
                    if space == AddressSpace::Shared =>
                {
                    self.shared_base(sym)?
                }
                Some(_) => {
                    return Err(self.unsupported(format!(
                        "a generic or global access to shared array `{name}`"
                    )));
                }
                None => self.read(&Operand::Name(name.clone()), at)?,
            },
        };
        if *offset == 0 {
            return Ok(start);
        }
        let off = self.konst(at, *offset as u64 & mask(at));
        self.bin(BinaryOp::Add, start, off)
    }

    /// One instruction, under its guard.
    fn inst(&mut self, inst: &Inst) -> R<()> {
        self.line = inst.line;
        match &inst.guard {
            None => self.unguarded(inst),
            Some(g) => {
                let cond = self.guard(g)?;
                self.when(cond, |l| l.unguarded(inst))
            }
        }
    }

    fn unguarded(&mut self, inst: &Inst) -> R<()> {
        let parts: Vec<&str> = inst.opcode.split('.').collect();
        let mods: Vec<&str> = parts[1..].to_vec();
        let types: Vec<S> = mods
            .iter()
            .filter_map(|m| elem_type(&format!(".{m}")))
            .collect();
        let has = |m: &str| mods.contains(&m);
        let ops = &inst.operands;
        let ty = types.last().copied();
        let need_ty = || ty.ok_or_else(|| self.err(format!("`{}` has no type", inst.opcode)));
        let arg = |i: usize| {
            ops.get(i).ok_or_else(|| {
                ImportError::new(
                    inst.line,
                    format!("`{}` needs operand {}", inst.opcode, i + 1),
                )
            })
        };
        let dst = |i: usize| match ops.get(i) {
            Some(Operand::Name(n)) => Ok(n.clone()),
            _ => Err(ImportError::new(
                inst.line,
                format!("`{}`'s operand {} is not a register", inst.opcode, i + 1),
            )),
        };
        for m in ["rz", "rm", "rp"] {
            let toward_zero_sum = m == "rz" && matches!(parts[0], "add" | "sub");
            if has(m) && !matches!(parts[0], "cvt") && !toward_zero_sum {
                return Err(self.unsupported(format!("rounding mode `.{m}` of `{}`", inst.opcode)));
            }
        }
        match parts[0] {
            "mov" => {
                let t = need_ty()?;
                match (arg(0)?, arg(1)?) {
                    (Operand::Vector(parts), src) => self.unpack(parts, src, t),
                    (Operand::Name(d), Operand::Vector(parts)) => {
                        let v = self.pack(parts, t)?;
                        self.set(&d.clone(), v)
                    }
                    (_, src) => {
                        let v = self.read(src, t)?;
                        self.set(&dst(0)?, v)
                    }
                }
            }
            "shfl" => self.shuffle(inst, &mods),
            "vote" => self.vote(inst, &mods),
            "ld" | "st" => self.memory(inst, &mods, need_ty()?),
            "cvta" => {
                if !has("global") {
                    return Err(
                        self.unsupported(format!("`{}` (only global addresses)", inst.opcode))
                    );
                }
                let v = self.read(arg(1)?, S::U64)?;
                self.set(&dst(0)?, v)
            }
            "add" | "sub" | "min" | "max" | "and" | "or" | "xor" => {
                let t = need_ty()?;
                if has("cc") || has("sat") && !t.is_float() {
                    return Err(self.unsupported(format!("`{}`", inst.opcode)));
                }
                let (a, c) = (self.read(arg(1)?, t)?, self.read(arg(2)?, t)?);
                let (a, c) = (self.flush(a, &mods)?, self.flush(c, &mods)?);
                let op = match parts[0] {
                    "add" => BinaryOp::Add,
                    "sub" => BinaryOp::Sub,
                    "min" => BinaryOp::Min,
                    "max" => BinaryOp::Max,
                    "and" => BinaryOp::And,
                    "or" => BinaryOp::Or,
                    _ => BinaryOp::Xor,
                };
                let v = if has("rz") && matches!(op, BinaryOp::Add | BinaryOp::Sub) && t.is_float()
                {
                    let c = if op == BinaryOp::Sub {
                        self.def(Op::Unary(UnaryOp::Neg, c))?
                    } else {
                        c
                    };
                    self.sum_toward_zero(a, c)?
                } else {
                    self.bin(op, a, c)?
                };
                let v = self.float_result(v, &mods)?;
                self.set(&dst(0)?, v)
            }
            "mul" | "mad" => self.multiply(inst, &mods, need_ty()?),
            "fma" => {
                let t = need_ty()?;
                let a = self.read(arg(1)?, t)?;
                let c = self.read(arg(2)?, t)?;
                let d = self.read(arg(3)?, t)?;
                let (a, c, d) = (
                    self.flush(a, &mods)?,
                    self.flush(c, &mods)?,
                    self.flush(d, &mods)?,
                );
                let v = self.def(Op::Ternary(TernaryOp::MulAdd, a, c, d))?;
                let v = self.float_result(v, &mods)?;
                self.set(&dst(0)?, v)
            }
            "div" | "rem" => {
                let t = need_ty()?;
                let (a, c) = (self.read(arg(1)?, t)?, self.read(arg(2)?, t)?);
                let op = if parts[0] == "div" {
                    BinaryOp::Div
                } else {
                    BinaryOp::Rem
                };
                let v = if t.is_float() {
                    let (a, c) = (self.flush(a, &mods)?, self.flush(c, &mods)?);
                    let v = self.bin(op, a, c)?;
                    self.float_result(v, &mods)?
                } else {
                    self.int_divide(op, a, c, t)?
                };
                self.set(&dst(0)?, v)
            }
            "neg" | "abs" | "not" | "sqrt" | "rsqrt" | "rcp" | "ex2" | "lg2" | "sin" | "cos"
            | "tanh" | "popc" | "clz" => self.unary(inst, parts[0], &mods, need_ty()?),
            "shl" | "shr" => {
                let t = need_ty()?;
                let t = if parts[0] == "shr" || !t.is_signed_int() {
                    t
                } else {
                    bits_type(t.size_bytes())
                };
                let a = self.read(arg(1)?, t)?;
                let n = self.read(arg(2)?, S::U32)?;
                let op = if parts[0] == "shl" {
                    BinaryOp::Shl
                } else {
                    BinaryOp::Shr
                };
                // PTX clamps the amount at the width; the IR takes it modulo the width.
                let width = self.konst(S::U32, u64::from(t.size_bytes() * 8));
                let over = self.cmp(CmpOp::Ge, n, width)?;
                let last = self.konst(S::U32, u64::from(t.size_bytes() * 8 - 1));
                let clamped = self.select(over, last, n)?;
                let shifted = self.bin(op, a, clamped)?;
                let v = if op == BinaryOp::Shr && t.is_signed_int() {
                    shifted
                } else {
                    let zero = self.konst(t, 0);
                    let normal = self.bin(op, a, n)?;
                    self.select(over, zero, normal)?
                };
                self.set(&dst(0)?, v)
            }
            "setp" => self.setp(inst, &mods, need_ty()?),
            "selp" => {
                let t = need_ty()?;
                let a = self.read(arg(1)?, t)?;
                let c = self.read(arg(2)?, t)?;
                let p = self.read(arg(3)?, S::Bool)?;
                let v = self.select(p, a, c)?;
                self.set(&dst(0)?, v)
            }
            "cvt" => self.convert(inst, &mods, &types),
            "bar" | "barrier" => {
                let first = mods.first().copied().unwrap_or("sync");
                let id_zero = matches!(ops.first(), Some(Operand::Number(n)) if n == "0");
                if !matches!(first, "sync" | "aligned") || ops.len() != 1 || !id_zero {
                    return Err(self.unsupported(format!(
                        "`{}` other than a whole-block `bar.sync 0`",
                        inst.opcode
                    )));
                }
                self.b.push(Stmt::Barrier);
                Ok(())
            }
            "membar" | "fence" => {
                self.b.push(Stmt::Fence {
                    scope: scope_of(&mods),
                });
                Ok(())
            }
            "atom" | "red" => self.atomic(inst, &mods, need_ty()?),
            "trap" => {
                self.b.push(Stmt::Trap(cuprum_ir::TrapKind::Assert {
                    message: format!("the PTX's `trap` at line {}", inst.line),
                }));
                Ok(())
            }
            "copysign" => {
                // `copysign d, a, b`: b's magnitude with a's sign.
                let t = need_ty()?;
                let bits_t = bits_type(t.size_bytes());
                let a = self.read(arg(1)?, bits_t)?;
                let c = self.read(arg(2)?, bits_t)?;
                let sign = self.konst(bits_t, 1u64 << (t.size_bytes() * 8 - 1));
                let rest = self.konst(bits_t, mask(bits_t) >> 1);
                let a_sign = self.bin(BinaryOp::And, a, sign)?;
                let c_rest = self.bin(BinaryOp::And, c, rest)?;
                let v = self.bin(BinaryOp::Or, a_sign, c_rest)?;
                self.set(&dst(0)?, v)
            }
            "brev" => {
                let t = need_ty()?;
                let bits_t = bits_type(t.size_bytes());
                let v = self.read(arg(1)?, bits_t)?;
                let v = self.reverse_bits(v, bits_t)?;
                self.set(&dst(0)?, v)
            }
            other => Err(self.unsupported(format!("instruction `{other}` (`{}`)", inst.opcode))),
        }
    }

    /// `mov.b64 {a, b}, x`: `x`'s bits split into equal parts, lowest first.
    fn unpack(&mut self, parts: &[String], src: &Operand, t: S) -> R<()> {
        let n = parts.len() as u32;
        if n < 2 || !t.size_bytes().is_multiple_of(n) {
            return Err(self.err("a `mov` splitting a value into uneven parts"));
        }
        let part = bits_type(t.size_bytes() / n);
        let whole = self.read(src, bits_type(t.size_bytes()))?;
        for (k, name) in parts.iter().enumerate() {
            let by = self.konst(S::U32, u64::from(k as u32 * part.size_bytes() * 8));
            let shifted = self.bin(BinaryOp::Shr, whole, by)?;
            let piece = self.b.cast(shifted, part).map_err(|e| self.built(e))?;
            if name != "_" {
                self.set(name, piece)?;
            }
        }
        Ok(())
    }

    /// `mov.b64 x, {a, b}`: the parts' bits put together, lowest first.
    fn pack(&mut self, parts: &[String], t: S) -> R<Value> {
        let n = parts.len() as u32;
        if n < 2 || !t.size_bytes().is_multiple_of(n) {
            return Err(self.err("a `mov` joining uneven parts"));
        }
        let whole_t = bits_type(t.size_bytes());
        let part = bits_type(t.size_bytes() / n);
        let mut acc = self.konst(whole_t, 0);
        for (k, name) in parts.iter().enumerate() {
            let piece = self.read(&Operand::Name(name.clone()), part)?;
            let wide = self.b.cast(piece, whole_t).map_err(|e| self.built(e))?;
            let by = self.konst(S::U32, u64::from(k as u32 * part.size_bytes() * 8));
            let placed = self.bin(BinaryOp::Shl, wide, by)?;
            acc = self.bin(BinaryOp::Or, acc, placed)?;
        }
        self.convert_bits(acc, t)
    }

    /// The member mask of a warp instruction: the whole warp (`-1`), or a register, taken
    /// to name the lanes that execute the instruction together (as a well-formed program's
    /// masks do: cuprum's warp operations act on exactly those lanes). A constant naming
    /// part of the warp is refused.
    fn full_warp(&self, op: Option<&Operand>, inst: &Inst) -> R<()> {
        match op {
            Some(Operand::Number(m)) if number_bits(m, S::U32) == Some(u64::from(u32::MAX)) => {
                Ok(())
            }
            Some(Operand::Name(r)) if self.regs.contains_key(r) => Ok(()),
            _ => Err(self.unsupported(format!(
                "`{}` with a member mask other than the whole warp (-1)",
                inst.opcode
            ))),
        }
    }

    /// `shfl.sync.mode.b32 d[|p], a, b, c, membermask` over the whole warp.
    fn shuffle(&mut self, inst: &Inst, mods: &[&str]) -> R<()> {
        let ops = &inst.operands;
        let mode = match mods.get(1).copied() {
            Some("up") => cuprum_ir::ShuffleMode::Up,
            Some("down") => cuprum_ir::ShuffleMode::Down,
            Some("bfly") => cuprum_ir::ShuffleMode::Xor,
            Some("idx") => cuprum_ir::ShuffleMode::Idx,
            _ => return Err(self.unsupported(format!("`{}`", inst.opcode))),
        };
        if mods.first() != Some(&"sync") || ops.len() != 5 {
            return Err(self.unsupported(format!(
                "`{}` (only `shfl.sync` with five operands)",
                inst.opcode
            )));
        }
        self.full_warp(ops.get(4), inst)?;
        // The clamp operand of a whole-warp shuffle: 0 for `up`, 31 for the others.
        let whole = if mode == cuprum_ir::ShuffleMode::Up {
            0
        } else {
            31
        };
        if !matches!(&ops[3], Operand::Number(c) if number_bits(c, S::U32) == Some(whole)) {
            return Err(self.unsupported(format!(
                "`{}` over segments of the warp (its third operand must be {whole})",
                inst.opcode
            )));
        }
        let value = self.read(&ops[1], S::U32)?;
        let lane = self.read(&ops[2], S::U32)?;
        let v = self.def(Op::Shuffle { mode, value, lane })?;
        let (d, p) = match &ops[0] {
            Operand::Name(d) => (d.clone(), None),
            Operand::Pair(d, p) => (d.clone(), Some(p.clone())),
            _ => return Err(self.err("a shuffle without a destination register")),
        };
        self.set(&d, v)?;
        if let Some(p) = p {
            // Whether the source lane was inside the warp.
            let me = self.def(Op::Special(Special::LaneId))?;
            let bits = self.konst(S::U32, 31);
            let delta = self.bin(BinaryOp::And, lane, bits)?;
            let inside = match mode {
                cuprum_ir::ShuffleMode::Up => self.cmp(CmpOp::Ge, me, delta)?,
                cuprum_ir::ShuffleMode::Down => {
                    let to = self.bin(BinaryOp::Add, me, delta)?;
                    self.cmp(CmpOp::Le, to, bits)?
                }
                _ => self.b.constant(Constant::new(S::Bool, 1)),
            };
            self.set(&p, inside)?;
        }
        Ok(())
    }

    /// `vote.sync.{all,any,ballot}.{pred,b32} d, p, membermask` over the whole warp.
    fn vote(&mut self, inst: &Inst, mods: &[&str]) -> R<()> {
        let ops = &inst.operands;
        let mode = match mods.get(1).copied() {
            Some("all") => cuprum_ir::VoteMode::All,
            Some("any") => cuprum_ir::VoteMode::Any,
            Some("ballot") => cuprum_ir::VoteMode::Ballot,
            _ => return Err(self.unsupported(format!("`{}`", inst.opcode))),
        };
        if mods.first() != Some(&"sync") || ops.len() != 3 {
            return Err(self.unsupported(format!("`{}` (only `vote.sync`)", inst.opcode)));
        }
        self.full_warp(ops.get(2), inst)?;
        let Operand::Name(d) = &ops[0] else {
            return Err(self.err("a vote without a destination register"));
        };
        let d = d.clone();
        let pred = self.read(&ops[1], S::Bool)?;
        let v = self.def(Op::Vote { mode, pred })?;
        self.set(&d, v)
    }

    /// `v`'s bits in reverse order: swaps of ever larger neighbouring groups.
    fn reverse_bits(&mut self, mut v: Value, t: S) -> R<Value> {
        let width = t.size_bytes() * 8;
        let mut group = 1u32;
        while group < width {
            // The low half of each pair of groups.
            let mut low_mask = 0u64;
            let mut at = 0;
            while at < width {
                low_mask |= ((1u64 << group) - 1) << at;
                at += 2 * group;
            }
            let low = self.konst(t, low_mask & mask(t));
            let high = self.konst(t, !low_mask & mask(t));
            let by = self.konst(S::U32, u64::from(group));
            let lo = self.bin(BinaryOp::And, v, low)?;
            let lo = self.bin(BinaryOp::Shl, lo, by)?;
            let hi = self.bin(BinaryOp::And, v, high)?;
            let hi = self.bin(BinaryOp::Shr, hi, by)?;
            v = self.bin(BinaryOp::Or, lo, hi)?;
            group *= 2;
        }
        Ok(v)
    }

    /// `.ftz`: a subnormal input or result is a zero of its sign (for `f32`).
    fn flush(&mut self, v: Value, mods: &[&str]) -> R<Value> {
        let t = self.b.type_of(v);
        if !mods.contains(&"ftz") || t != S::F32 {
            return Ok(v);
        }
        let abs = self.def(Op::Unary(UnaryOp::Abs, v))?;
        let least = self.konst(S::F32, u64::from(f32::MIN_POSITIVE.to_bits()));
        let tiny = self.cmp(CmpOp::Lt, abs, least)?;
        let zero = self.konst(S::F32, 0);
        let signed_zero = self.bin(BinaryOp::Mul, v, zero)?;
        self.select(tiny, signed_zero, v)
    }

    /// A float result under `.ftz` and `.sat` (clamped to `[0, 1]`, NaN to 0).
    fn float_result(&mut self, v: Value, mods: &[&str]) -> R<Value> {
        let t = self.b.type_of(v);
        if !t.is_float() {
            return Ok(v);
        }
        let v = self.flush(v, mods)?;
        if !mods.contains(&"sat") {
            return Ok(v);
        }
        let one = self.konst(t, Constant::f64_in(t, 1.0));
        let zero = self.konst(t, 0);
        let low = self.bin(BinaryOp::Min, v, one)?;
        let clamped = self.bin(BinaryOp::Max, low, zero)?;
        let nan = self.cmp(CmpOp::Ne, v, v)?;
        self.select(nan, zero, clamped)
    }

    /// Integer `div`/`rem`, with the results the PTX ISA leaves unspecified made definite: a
    /// zero divisor gives all ones (`div`) or the dividend (`rem`), `MIN / -1` wraps.
    fn int_divide(&mut self, op: BinaryOp, a: Value, c: Value, t: S) -> R<Value> {
        let zero = self.konst(t, 0);
        let one = self.konst(t, 1);
        let by_zero = self.cmp(CmpOp::Eq, c, zero)?;
        let mut bad = by_zero;
        if t.is_signed_int() {
            let minus_one = self.konst(t, mask(t));
            let min = self.konst(t, 1u64 << (t.size_bytes() * 8 - 1));
            let is_min = self.cmp(CmpOp::Eq, a, min)?;
            let is_m1 = self.cmp(CmpOp::Eq, c, minus_one)?;
            let overflow = self.bin(BinaryOp::And, is_min, is_m1)?;
            bad = self.bin(BinaryOp::Or, by_zero, overflow)?;
        }
        let safe = self.select(bad, one, c)?;
        let q = self.bin(op, a, safe)?;
        // MIN / -1 = MIN (wrapped), MIN % -1 = 0; x / 0 = all ones, x % 0 = x.
        let wrapped = match op {
            BinaryOp::Div => self.def(Op::Unary(UnaryOp::Neg, a))?,
            _ => zero,
        };
        let on_zero = match op {
            BinaryOp::Div => self.konst(t, mask(t)),
            _ => a,
        };
        let v = self.select(bad, wrapped, q)?;
        self.select(by_zero, on_zero, v)
    }

    fn multiply(&mut self, inst: &Inst, mods: &[&str], t: S) -> R<()> {
        let ops = &inst.operands;
        let get = |i: usize| {
            ops.get(i)
                .ok_or_else(|| ImportError::new(inst.line, "a missing operand"))
        };
        let mad = inst.opcode.starts_with("mad");
        let Some(Operand::Name(d)) = ops.first() else {
            return Err(self.err("a multiply without a destination register"));
        };
        let d = d.clone();
        let a = self.read(get(1)?, t)?;
        let c = self.read(get(2)?, t)?;
        if t.is_float() {
            let (a, c) = (self.flush(a, mods)?, self.flush(c, mods)?);
            let v = if mad {
                // `mad` on floats is a fused multiply-add (`mad.rn.f32` = `fma.rn.f32`).
                let e = self.read(get(3)?, t)?;
                let e = self.flush(e, mods)?;
                self.def(Op::Ternary(TernaryOp::MulAdd, a, c, e))?
            } else {
                self.bin(BinaryOp::Mul, a, c)?
            };
            let v = self.float_result(v, mods)?;
            return self.set(&d, v);
        }
        let wide = mods.contains(&"wide");
        let (product, rt) = if wide {
            let wt = match t {
                S::I16 => S::I32,
                S::U16 => S::U32,
                S::I32 => S::I64,
                S::U32 => S::U64,
                _ => return Err(self.unsupported(format!("`{}`", inst.opcode))),
            };
            let a = self.b.cast(a, wt).map_err(|e| self.built(e))?;
            let c = self.b.cast(c, wt).map_err(|e| self.built(e))?;
            (self.bin(BinaryOp::Mul, a, c)?, wt)
        } else if mods.contains(&"hi") {
            (self.bin(BinaryOp::MulHigh, a, c)?, t)
        } else {
            (self.bin(BinaryOp::Mul, a, c)?, t)
        };
        let v = if mad {
            let e = self.read(get(3)?, rt)?;
            self.bin(BinaryOp::Add, product, e)?
        } else {
            product
        };
        self.set(&d, v)
    }

    fn unary(&mut self, inst: &Inst, name: &str, mods: &[&str], t: S) -> R<()> {
        let (Some(Operand::Name(d)), Some(a)) = (inst.operands.first(), inst.operands.get(1))
        else {
            return Err(self.err(format!("`{}` needs a register and an operand", inst.opcode)));
        };
        let d = d.clone();
        let a = self.read(a, t)?;
        let a = self.flush(a, mods)?;
        let float = |l: &Self| {
            if t.is_float() {
                Ok(())
            } else {
                Err(l.err(format!("`{}` on integers", inst.opcode)))
            }
        };
        let v = match name {
            "neg" => self.def(Op::Unary(UnaryOp::Neg, a))?,
            "not" if t == S::Bool || !t.is_float() => self.def(Op::Unary(UnaryOp::Not, a))?,
            "abs" if t.is_float() => self.def(Op::Unary(UnaryOp::Abs, a))?,
            "abs" => {
                let zero = self.konst(t, 0);
                let negative = self.cmp(CmpOp::Lt, a, zero)?;
                let n = self.def(Op::Unary(UnaryOp::Neg, a))?;
                self.select(negative, n, a)?
            }
            "popc" => self.def(Op::Unary(UnaryOp::CountOnes, a))?,
            "clz" => self.def(Op::Unary(UnaryOp::LeadingZeros, a))?,
            // The approximate forms (`.approx`) are computed as their correctly rounded
            // counterparts (see the crate docs).
            "sqrt" => {
                float(self)?;
                self.def(Op::Unary(UnaryOp::Sqrt, a))?
            }
            "rsqrt" => {
                float(self)?;
                let s = self.def(Op::Unary(UnaryOp::Sqrt, a))?;
                let one = self.konst(t, Constant::f64_in(t, 1.0));
                self.bin(BinaryOp::Div, one, s)?
            }
            "rcp" => {
                float(self)?;
                let one = self.konst(t, Constant::f64_in(t, 1.0));
                self.bin(BinaryOp::Div, one, a)?
            }
            "ex2" => self.def(Op::Unary(UnaryOp::Exp2, a))?,
            "lg2" => self.def(Op::Unary(UnaryOp::Log2, a))?,
            "sin" => self.def(Op::Unary(UnaryOp::Sin, a))?,
            "cos" => self.def(Op::Unary(UnaryOp::Cos, a))?,
            "tanh" => self.def(Op::Unary(UnaryOp::Tanh, a))?,
            _ => return Err(self.unsupported(format!("`{}`", inst.opcode))),
        };
        let v = self.float_result(v, mods)?;
        self.set(&d, v)
    }

    fn setp(&mut self, inst: &Inst, mods: &[&str], t: S) -> R<()> {
        let ops = &inst.operands;
        let (p, q) = match ops.first() {
            Some(Operand::Name(p)) => (p.clone(), None),
            Some(Operand::Pair(p, q)) => (p.clone(), Some(q.clone())),
            _ => return Err(self.err("`setp` without a predicate")),
        };
        let (Some(a), Some(c)) = (ops.get(1), ops.get(2)) else {
            return Err(self.err("`setp` needs two operands"));
        };
        let a = self.read(a, t)?;
        let c = self.read(c, t)?;
        let (a, c) = (self.flush(a, mods)?, self.flush(c, mods)?);
        let cmp = mods
            .first()
            .copied()
            .ok_or_else(|| self.err("`setp` without a comparison"))?;
        let unordered = |l: &mut Self| -> R<Value> {
            let na = l.cmp(CmpOp::Ne, a, a)?;
            let nc = l.cmp(CmpOp::Ne, c, c)?;
            l.bin(BinaryOp::Or, na, nc)
        };
        let plain = |l: &mut Self, op: CmpOp| l.cmp(op, a, c);
        let v = match cmp {
            "eq" => plain(self, CmpOp::Eq)?,
            "ne" if t.is_float() => {
                let ne = plain(self, CmpOp::Ne)?;
                let u = unordered(self)?;
                let ordered = self.def(Op::Unary(UnaryOp::Not, u))?;
                self.bin(BinaryOp::And, ne, ordered)?
            }
            "ne" | "neu" => plain(self, CmpOp::Ne)?,
            "lt" | "lo" => plain(self, CmpOp::Lt)?,
            "le" | "ls" => plain(self, CmpOp::Le)?,
            "gt" | "hi" => plain(self, CmpOp::Gt)?,
            "ge" | "hs" => plain(self, CmpOp::Ge)?,
            "equ" | "ltu" | "leu" | "gtu" | "geu" => {
                let op = match cmp {
                    "equ" => CmpOp::Eq,
                    "ltu" => CmpOp::Lt,
                    "leu" => CmpOp::Le,
                    "gtu" => CmpOp::Gt,
                    _ => CmpOp::Ge,
                };
                let r = plain(self, op)?;
                let u = unordered(self)?;
                self.bin(BinaryOp::Or, r, u)?
            }
            "num" => {
                let u = unordered(self)?;
                self.def(Op::Unary(UnaryOp::Not, u))?
            }
            "nan" => unordered(self)?,
            other => return Err(self.unsupported(format!("comparison `{other}` of `setp`"))),
        };
        // `.and`/`.or`/`.xor` with a third predicate operand.
        let v = match (mods.get(1).copied(), ops.get(3)) {
            (Some(m @ ("and" | "or" | "xor")), Some(r)) => {
                let r = self.read(r, S::Bool)?;
                let op = match m {
                    "and" => BinaryOp::And,
                    "or" => BinaryOp::Or,
                    _ => BinaryOp::Xor,
                };
                self.bin(op, v, r)?
            }
            _ => v,
        };
        if let Some(q) = q {
            let nv = self.def(Op::Unary(UnaryOp::Not, v))?;
            self.set(&q, nv)?;
        }
        self.set(&p, v)
    }

    fn convert(&mut self, inst: &Inst, mods: &[&str], types: &[S]) -> R<()> {
        let [to, from] = types else {
            return Err(self.err(format!("`{}` needs two types", inst.opcode)));
        };
        let (to, from) = (*to, *from);
        let (Some(Operand::Name(d)), Some(a)) = (inst.operands.first(), inst.operands.get(1))
        else {
            return Err(self.err("`cvt` needs a register and an operand"));
        };
        let d = d.clone();
        let a = self.read(a, from)?;
        let a = self.flush(a, mods)?;
        let has = |m: &str| mods.contains(&m);
        if has("sat") && !to.is_float() {
            return Err(self.unsupported(format!("`{}`", inst.opcode)));
        }
        let v = if from.is_float() && to.is_float() {
            let integral = if has("rni") {
                Some(self.round_even(a)?)
            } else if has("rzi") {
                Some(self.def(Op::Unary(UnaryOp::Trunc, a))?)
            } else if has("rmi") {
                Some(self.def(Op::Unary(UnaryOp::Floor, a))?)
            } else if has("rpi") {
                Some(self.def(Op::Unary(UnaryOp::Ceil, a))?)
            } else {
                None
            };
            if integral.is_none() && has("rz") && (from, to) == (S::F64, S::F32) {
                self.toward_zero(a, to)?
            } else {
                if integral.is_none() && to.size_bytes() < from.size_bytes() && !has("rn") {
                    return Err(self.unsupported(format!("rounding of `{}`", inst.opcode)));
                }
                let v = integral.unwrap_or(a);
                self.b.cast(v, to).map_err(|e| self.built(e))?
            }
        } else if from.is_float() {
            // To an integer: `.rzi` truncates (the cast), the others round first.
            let r = if has("rni") {
                self.round_even(a)?
            } else if has("rmi") {
                self.def(Op::Unary(UnaryOp::Floor, a))?
            } else if has("rpi") {
                self.def(Op::Unary(UnaryOp::Ceil, a))?
            } else if has("rzi") {
                a
            } else {
                return Err(
                    self.unsupported(format!("`{}` without an integer rounding", inst.opcode))
                );
            };
            self.b.cast(r, to).map_err(|e| self.built(e))?
        } else if to.is_float() {
            if has("rz") && from.size_bytes() <= 4 && matches!(to, S::F32 | S::F64) {
                self.toward_zero(a, to)?
            } else if has("rz") && from.size_bytes() == 8 && to == S::F32 {
                self.wide_int_to_f32_toward_zero(a, from)?
            } else if has("rz") || has("rm") || has("rp") {
                return Err(self.unsupported(format!("rounding of `{}`", inst.opcode)));
            } else {
                self.b.cast(a, to).map_err(|e| self.built(e))?
            }
        } else {
            self.b.cast(a, to).map_err(|e| self.built(e))?
        };
        let v = self.float_result(v, mods)?;
        self.set(&d, v)
    }

    /// An integer of at most 32 bits, or an `f64`, as a float rounded toward zero
    /// (`cvt.rz`): the nearest float, one step toward zero where that rounded away from it
    /// (judged in `f64`, which holds every such value exactly).
    fn toward_zero(&mut self, a: Value, to: S) -> R<Value> {
        let nearest = self.b.cast(a, to).map_err(|e| self.built(e))?;
        if to == S::F64 {
            return Ok(nearest);
        }
        let exact = self.b.cast(a, S::F64).map_err(|e| self.built(e))?;
        let back = self.b.cast(nearest, S::F64).map_err(|e| self.built(e))?;
        let exact = self.def(Op::Unary(UnaryOp::Abs, exact))?;
        let back = self.def(Op::Unary(UnaryOp::Abs, back))?;
        let away = self.cmp(CmpOp::Gt, back, exact)?;
        let bits = self.b.bitcast(nearest, S::U32).map_err(|e| self.built(e))?;
        let one = self.konst(S::U32, 1);
        let smaller = self.bin(BinaryOp::Sub, bits, one)?;
        let bits = self.select(away, smaller, bits)?;
        self.b.bitcast(bits, S::F32).map_err(|e| self.built(e))
    }

    /// `a + b` rounded toward zero (`add.rz`): the nearest sum, one step toward zero where
    /// the exact error (TwoSum's, exact in round-to-nearest arithmetic) says it rounded away
    /// from zero; an overflow of finite operands is the largest finite value.
    fn sum_toward_zero(&mut self, a: Value, b: Value) -> R<Value> {
        let t = self.b.type_of(a);
        let s = self.bin(BinaryOp::Add, a, b)?;
        let bb = self.bin(BinaryOp::Sub, s, a)?;
        let s_bb = self.bin(BinaryOp::Sub, s, bb)?;
        let da = self.bin(BinaryOp::Sub, a, s_bb)?;
        let db = self.bin(BinaryOp::Sub, b, bb)?;
        let err = self.bin(BinaryOp::Add, da, db)?;
        let zero = self.konst(t, 0);
        let s_pos = self.cmp(CmpOp::Gt, s, zero)?;
        let s_neg = self.cmp(CmpOp::Lt, s, zero)?;
        let e_neg = self.cmp(CmpOp::Lt, err, zero)?;
        let e_pos = self.cmp(CmpOp::Gt, err, zero)?;
        let up = self.bin(BinaryOp::And, s_pos, e_neg)?;
        let down = self.bin(BinaryOp::And, s_neg, e_pos)?;
        let away = self.bin(BinaryOp::Or, up, down)?;
        // Overflow: the sum is infinite, the operands are not.
        let inf = self.konst(t, Constant::f64_in(t, f64::INFINITY));
        let finite = |l: &mut Self, x: Value| -> R<Value> {
            let ax = l.def(Op::Unary(UnaryOp::Abs, x))?;
            l.cmp(CmpOp::Lt, ax, inf)
        };
        let (fa, fb) = (finite(self, a)?, finite(self, b)?);
        let fs = finite(self, s)?;
        let s_inf = {
            let is_nan = self.cmp(CmpOp::Ne, s, s)?;
            let not_nan = self.def(Op::Unary(UnaryOp::Not, is_nan))?;
            let not_finite = self.def(Op::Unary(UnaryOp::Not, fs))?;
            self.bin(BinaryOp::And, not_nan, not_finite)?
        };
        let operands_finite = self.bin(BinaryOp::And, fa, fb)?;
        let overflow = self.bin(BinaryOp::And, s_inf, operands_finite)?;
        let step = self.bin(BinaryOp::Or, away, overflow)?;
        let bits_t = bits_type(t.size_bytes());
        let bits = self.b.bitcast(s, bits_t).map_err(|e| self.built(e))?;
        let one = self.konst(bits_t, 1);
        let smaller = self.bin(BinaryOp::Sub, bits, one)?;
        let bits = self.select(step, smaller, bits)?;
        self.b.bitcast(bits, t).map_err(|e| self.built(e))
    }

    /// A 64-bit integer as an `f32` rounded toward zero: its top 24 significant bits,
    /// truncated, times a power of two (both exact), with the sign put back.
    fn wide_int_to_f32_toward_zero(&mut self, a: Value, from: S) -> R<Value> {
        let zero = self.konst(from, 0);
        let negative = if from.is_signed_int() {
            self.cmp(CmpOp::Lt, a, zero)?
        } else {
            self.b.constant(Constant::new(S::Bool, 0))
        };
        let neg = self.def(Op::Unary(UnaryOp::Neg, a))?;
        let magnitude = self.select(negative, neg, a)?;
        let magnitude = self
            .b
            .bitcast(magnitude, S::U64)
            .map_err(|e| self.built(e))?;
        let lz = self.def(Op::Unary(UnaryOp::LeadingZeros, magnitude))?;
        let lz = self.b.cast(lz, S::U32).map_err(|e| self.built(e))?;
        let forty = self.konst(S::U32, 40);
        let over = self.cmp(CmpOp::Lt, lz, forty)?;
        let diff = self.bin(BinaryOp::Sub, forty, lz)?;
        let none = self.konst(S::U32, 0);
        let shift = self.select(over, diff, none)?;
        let top = self.bin(BinaryOp::Shr, magnitude, shift)?;
        let top = self.b.cast(top, S::F32).map_err(|e| self.built(e))?;
        let bias = self.konst(S::U32, 127);
        let exponent = self.bin(BinaryOp::Add, shift, bias)?;
        let by = self.konst(S::U32, 23);
        let scale = self.bin(BinaryOp::Shl, exponent, by)?;
        let scale = self.b.bitcast(scale, S::F32).map_err(|e| self.built(e))?;
        let r = self.bin(BinaryOp::Mul, top, scale)?;
        let nr = self.def(Op::Unary(UnaryOp::Neg, r))?;
        self.select(negative, nr, r)
    }

    /// Rounds a float to the nearest integral value, ties to even (`.rni`): adding and
    /// subtracting 2^23 (2^52 for `f64`) with the value's sign rounds it so where it is
    /// smaller than that; larger values are integral already.
    fn round_even(&mut self, a: Value) -> R<Value> {
        let t = self.b.type_of(a);
        let big = if t == S::F64 {
            2f64.powi(52)
        } else {
            2f64.powi(23)
        };
        let big_v = self.konst(t, Constant::f64_in(t, big));
        let abs = self.def(Op::Unary(UnaryOp::Abs, a))?;
        let small = self.cmp(CmpOp::Lt, abs, big_v)?;
        let up = self.bin(BinaryOp::Add, abs, big_v)?;
        let rounded = self.bin(BinaryOp::Sub, up, big_v)?;
        let zero = self.konst(t, 0);
        let negative = self.cmp(CmpOp::Lt, a, zero)?;
        let neg = self.def(Op::Unary(UnaryOp::Neg, rounded))?;
        let signed = self.select(negative, neg, rounded)?;
        // Keep the sign of a zero result (`-0.4` rounds to `-0.0`).
        let signed = {
            let is_zero = self.cmp(CmpOp::Eq, signed, zero)?;
            let sz = self.bin(BinaryOp::Mul, a, zero)?;
            self.select(is_zero, sz, signed)?
        };
        self.select(small, signed, a)
    }

    fn memory(&mut self, inst: &Inst, mods: &[&str], t: S) -> R<()> {
        let load = inst.opcode.starts_with("ld");
        let has = |m: &str| mods.contains(&m);
        for m in ["acquire", "release", "relaxed", "const", "mmio"] {
            if has(m) {
                return Err(self.unsupported(format!("`.{m}` of `{}`", inst.opcode)));
            }
        }
        let ops = &inst.operands;
        if has("param") {
            let (
                Some(dst),
                Some(Operand::Address {
                    base: Some(name),
                    offset,
                }),
            ) = (ops.first(), ops.get(1))
            else {
                return Err(self.unsupported(format!("the operands of `{}`", inst.opcode)));
            };
            let names = match dst {
                Operand::Name(d) => vec![d.clone()],
                Operand::Vector(ds) => ds.clone(),
                _ => return Err(self.err("a parameter load into something not a register")),
            };
            for (j, d) in names.iter().enumerate() {
                let at = *offset + (j as u32 * t.size_bytes()) as i64;
                let v = self.param_value(name, at, t)?;
                self.set(d, v)?;
            }
            return Ok(());
        }
        let space = space_of(mods);
        let vector = mods.iter().find_map(|m| match *m {
            "v2" => Some(2usize),
            "v4" => Some(4),
            _ => None,
        });
        let (value_at, addr_at) = if load { (0, 1) } else { (1, 0) };
        let addr_op = ops
            .get(addr_at)
            .ok_or_else(|| self.err(format!("`{}` needs an address", inst.opcode)))?;
        let addr = self.address(addr_op, space)?;
        // Registers narrower than 16 bits hold `.b8`/`.u8`/`.s8` values widened.
        match (vector, ops.get(value_at)) {
            (None, Some(value)) => {
                if load {
                    let Operand::Name(d) = value else {
                        return Err(self.err("a load into something not a register"));
                    };
                    let v = self.def(Op::Load {
                        space,
                        ty: t,
                        addr,
                        eviction: Eviction::Normal,
                    })?;
                    let v = if t.size_bytes() == 1 {
                        let wide = if t.is_signed_int() { S::I32 } else { S::U32 };
                        self.b.cast(v, wide).map_err(|e| self.built(e))?
                    } else {
                        v
                    };
                    self.set(&d.clone(), v)
                } else {
                    let v = if t.size_bytes() == 1 {
                        let wide = self.read(value, S::U32)?;
                        self.b.cast(wide, t).map_err(|e| self.built(e))?
                    } else {
                        self.read(value, t)?
                    };
                    self.b.push(Stmt::Store {
                        space,
                        addr,
                        value: v,
                    });
                    Ok(())
                }
            }
            (Some(n), Some(Operand::Vector(names))) if names.len() == n => {
                if load {
                    let built = self
                        .b
                        .vector_load(space, t, addr, n)
                        .map_err(|e| self.built(e))?;
                    for (name, v) in names.iter().zip(built) {
                        if name != "_" {
                            self.set(name, v)?;
                        }
                    }
                    Ok(())
                } else {
                    let values = names
                        .iter()
                        .map(|name| self.read(&Operand::Name(name.clone()), t))
                        .collect::<R<Vec<_>>>()?;
                    self.b
                        .vector_store(space, addr, values)
                        .map_err(|e| self.built(e))
                }
            }
            _ => Err(self.unsupported(format!("the operands of `{}`", inst.opcode))),
        }
    }

    /// The `t` at byte `offset` of parameter `name` (a scalar's own value, or bytes of a
    /// struct parameter put together little-endian).
    fn param_value(&mut self, name: &str, offset: i64, t: S) -> R<Value> {
        let loc = *self
            .params
            .get(name)
            .ok_or_else(|| self.err(format!("`{name}` is not a parameter")))?;
        match loc {
            ParamLoc::Scalar(index) if offset == 0 => {
                let v = self.def(Op::Param(index))?;
                self.convert_bits(v, t)
            }
            ParamLoc::Scalar(_) => Err(self.unsupported(format!(
                "a load at byte {offset} of scalar parameter `{name}`"
            ))),
            ParamLoc::Bytes { first, count } => {
                let size = t.size_bytes();
                let inside = u32::try_from(offset)
                    .ok()
                    .filter(|o| o.checked_add(size).is_some_and(|end| end <= count));
                let Some(offset) = inside else {
                    return Err(self.err(format!(
                        "a {size}-byte load at byte {offset} of the {count}-byte parameter `{name}`"
                    )));
                };
                let mut acc = self.konst(S::U64, 0);
                for k in 0..size {
                    let byte = self.def(Op::Param(first + offset + k))?;
                    let wide = self.b.cast(byte, S::U64).map_err(|e| self.built(e))?;
                    let by = self.konst(S::U32, u64::from(8 * k));
                    let placed = self.bin(BinaryOp::Shl, wide, by)?;
                    acc = self.bin(BinaryOp::Or, acc, placed)?;
                }
                let bits = self
                    .b
                    .cast(acc, bits_type(size))
                    .map_err(|e| self.built(e))?;
                self.convert_bits(bits, t)
            }
        }
    }

    fn atomic(&mut self, inst: &Inst, mods: &[&str], t: S) -> R<()> {
        let reduction = inst.opcode.starts_with("red");
        let has = |m: &str| mods.contains(&m);
        let space = space_of(mods);
        if space == AddressSpace::Local {
            return Err(self.err(format!("`{}` on local memory", inst.opcode)));
        }
        let op = [
            ("add", AtomicOp::Add),
            ("min", AtomicOp::Min),
            ("max", AtomicOp::Max),
            ("exch", AtomicOp::Exchange),
            ("cas", AtomicOp::CompareExchange),
            ("and", AtomicOp::And),
            ("or", AtomicOp::Or),
            ("xor", AtomicOp::Xor),
        ]
        .into_iter()
        .find_map(|(m, op)| has(m).then_some(op))
        .ok_or_else(|| self.unsupported(format!("`{}`", inst.opcode)))?;
        let scope = scope_of(mods);
        let ops = &inst.operands;
        let first = usize::from(!reduction);
        let addr_op = ops
            .get(first)
            .ok_or_else(|| self.err("an atomic without an address"))?;
        let addr = self.address(addr_op, space)?;
        let (value, compare) = if op == AtomicOp::CompareExchange {
            let c = ops
                .get(first + 1)
                .ok_or_else(|| self.err("`cas` needs a compare value"))?;
            let v = ops
                .get(first + 2)
                .ok_or_else(|| self.err("`cas` needs a new value"))?;
            (self.read(v, t)?, Some(self.read(c, t)?))
        } else {
            let v = ops
                .get(first + 1)
                .ok_or_else(|| self.err("an atomic without an operand"))?;
            (self.read(v, t)?, None)
        };
        let old = self.def(Op::Atomic {
            op,
            space,
            scope,
            order: MemOrder::Relaxed,
            addr,
            value,
            compare,
        })?;
        if !reduction {
            let Some(Operand::Name(d)) = ops.first() else {
                return Err(self.err("an atomic without a destination register"));
            };
            self.set(&d.clone(), old)?;
        }
        Ok(())
    }
}

/// The state space an instruction's modifiers name: `.shared`, `.local`, else global (also
/// for generic addresses, which the importer takes as global ones).
fn space_of(mods: &[&str]) -> AddressSpace {
    if mods.contains(&"shared") {
        AddressSpace::Shared
    } else if mods.contains(&"local") {
        AddressSpace::Local
    } else {
        AddressSpace::Global
    }
}

/// The scope an instruction's modifiers name (`.cta`, `.sys`), else the device's (`.gpu`,
/// and PTX's default for `membar.gl` and atomics).
fn scope_of(mods: &[&str]) -> Scope {
    if mods.contains(&"cta") {
        Scope::Block
    } else if mods.contains(&"sys") {
        Scope::System
    } else {
        Scope::Device
    }
}

/// A special register: `Some(register)`, or `None` for `WARP_SZ`/`%warpsize` (32).
fn special(name: &str) -> Option<Option<Special>> {
    let dim = |d: &str| match d {
        "x" => Some(Dim::X),
        "y" => Some(Dim::Y),
        "z" => Some(Dim::Z),
        _ => None,
    };
    if name == "WARP_SZ" {
        return Some(None);
    }
    if name == "%laneid" {
        return Some(Some(Special::LaneId));
    }
    let (reg, d) = name.split_once('.')?;
    let d = dim(d)?;
    Some(Some(match reg {
        "%tid" => Special::ThreadIdx(d),
        "%ntid" => Special::BlockDim(d),
        "%ctaid" => Special::BlockIdx(d),
        "%nctaid" => Special::GridDim(d),
        _ => return None,
    }))
}

/// All ones in `t`'s bits.
fn mask(t: S) -> u64 {
    match t.size_bytes() {
        8 => u64::MAX,
        n => (1u64 << (n * 8)) - 1,
    }
}

/// A number as a `ty`'s bits: integers (decimal, hexadecimal, negative), `0f`/`0d` float
/// bits, decimal floats, `0`/`1` for predicates.
fn number_bits(text: &str, ty: S) -> Option<u64> {
    let body = text.trim_start_matches('-');
    if ty.is_float() {
        let value = if let Some(hex) = body.strip_prefix("0f").or_else(|| body.strip_prefix("0F")) {
            f64::from(f32::from_bits(u32::from_str_radix(hex, 16).ok()?))
        } else if let Some(hex) = body.strip_prefix("0d").or_else(|| body.strip_prefix("0D")) {
            f64::from_bits(u64::from_str_radix(hex, 16).ok()?)
        } else {
            body.parse::<f64>().ok()?
        };
        let value = if text.starts_with('-') { -value } else { value };
        return Some(Constant::f64_in(ty, value));
    }
    let v = match parse_int(text) {
        Some(v) => v as u64,
        None => {
            let hex = body
                .strip_prefix("0x")
                .or_else(|| body.strip_prefix("0X"))?;
            u64::from_str_radix(hex.trim_end_matches('U'), 16).ok()?
        }
    };
    if ty == S::Bool {
        return (v <= 1).then_some(v);
    }
    Some(v & mask(ty))
}

/// Conversions of a host `f64` to a float type's bits.
trait FloatBits {
    fn f64_in(ty: S, v: f64) -> u64;
}

impl FloatBits for Constant {
    fn f64_in(ty: S, v: f64) -> u64 {
        match ty {
            S::F64 => v.to_bits(),
            S::F32 => u64::from((v as f32).to_bits()),
            S::F16 => u64::from(half::f16::from_f64(v).to_bits()),
            S::BF16 => u64::from(half::bf16::from_f64(v).to_bits()),
            _ => v as i64 as u64,
        }
    }
}
