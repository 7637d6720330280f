//! The host reference: evaluates a [`Program`] thread by thread in plain Rust, as an
//! independent definition to hold the emulator (and through it the GPU) to.
//!
//! Each thread runs on its own, with an explicit stack of frames, until it reaches a
//! collective statement: a warp operation (`Shuffle`, `Vote`) or a `Barrier`. A warp
//! operation is resolved once every live lane of the warp stands at that same statement,
//! with all their operands in hand; a barrier once every live thread of the block stands at
//! it. Between barriers the threads of a block run one after another, which is a valid
//! schedule for the programs the generator makes (no races, order-independent atomics).
//! Blocks run one after another too.
//!
//! Scalar semantics are in [`crate::scalar`]. What the reference can see of a broken program
//! (lanes that meet at different warp operations, a shuffle from an exited lane, a barrier
//! some threads miss, uninitialized reads, an index out of range) is a [`Fault::Invalid`].

use cuprum_ir::{AtomicOp, ScalarType, ShuffleMode, VoteMode};

use crate::inputs::{Fault, Inputs, Outcome, TrapClass};
use crate::program::{Check, Id, Node, Param, Place, Program, Source, Stmt};
use crate::scalar::{self, OpError};

/// Statements one thread may run before the reference gives up (a generator bug).
const STEP_LIMIT: u64 = 1 << 18;

#[derive(Clone, Copy, Debug)]
enum State<'p> {
    Running,
    /// Waiting at the warp operation that is its next statement.
    AtWarpOp(&'p Stmt),
    /// Waiting at the barrier that is its next statement.
    AtBarrier(&'p Stmt),
    Done,
}

impl State<'_> {
    /// Whether two threads are in the same state, at the same statement (by identity).
    fn same(&self, other: &Self) -> bool {
        match (self, other) {
            (State::Running, State::Running) | (State::Done, State::Done) => true,
            (State::AtWarpOp(a), State::AtWarpOp(b))
            | (State::AtBarrier(a), State::AtBarrier(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }

    fn done(&self) -> bool {
        matches!(self, State::Done)
    }

    fn running(&self) -> bool {
        matches!(self, State::Running)
    }
}

struct Frame<'p> {
    stmts: &'p [Stmt],
    pc: usize,
    is_loop: bool,
}

struct Thread<'p> {
    vals: Vec<u64>,
    vars: Vec<u64>,
    locals: Vec<Vec<Option<u64>>>,
    frames: Vec<Frame<'p>>,
    state: State<'p>,
    tid: u32,
    steps: u64,
}

struct Memory {
    buffers: Vec<Vec<u8>>,
    shared: Vec<Vec<Option<u64>>>,
    /// Per buffer, the global thread id that stored each element so far: a second thread
    /// storing the same element makes a racy program (no generated program does, but a
    /// shrunk one can, and then its result is the schedule's, not the program's).
    writers: Vec<Vec<Option<u32>>>,
}

fn read_elem(bytes: &[u8], ty: ScalarType, index: usize) -> Option<u64> {
    let size = ty.size_bytes() as usize;
    let chunk = bytes.get(index * size..(index + 1) * size)?;
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(chunk);
    Some(u64::from_le_bytes(b))
}

fn write_elem(bytes: &mut [u8], ty: ScalarType, index: usize, bits: u64) -> Option<()> {
    let size = ty.size_bytes() as usize;
    let chunk = bytes.get_mut(index * size..(index + 1) * size)?;
    chunk.copy_from_slice(&bits.to_le_bytes()[..size]);
    Some(())
}

fn invalid(what: impl Into<String>) -> Fault {
    Fault::Invalid(what.into())
}

fn op_fault(e: OpError, what: &str) -> Fault {
    match e {
        OpError::DivideByZero => Fault::Trap(TrapClass::DivideByZero),
        OpError::DivideOverflow => invalid(format!("{what}: signed MIN / -1")),
        OpError::Undefined => invalid(format!("{what} is not defined on its type")),
    }
}

struct Block<'p> {
    p: &'p Program,
    inputs: &'p Inputs,
    block_idx: u32,
}

impl<'p> Block<'p> {
    fn source(&self, t: &Thread<'_>, s: Source) -> u64 {
        let p = self.p;
        u64::from(match s {
            Source::ThreadIdx => t.tid,
            Source::LaneId => t.tid % 32,
            Source::BlockIdx => self.block_idx,
            Source::BlockDim => p.block,
            Source::GridDim => p.grid,
            Source::GlobalId => self.block_idx * p.block + t.tid,
        })
    }

    /// Reads the place's element.
    fn load(&self, t: &Thread<'_>, mem: &Memory, place: &Place) -> Result<u64, Fault> {
        let ty = self.p.elem(place);
        match *place {
            Place::Buffer { param, index } => {
                let i = t.vals[index as usize] as usize;
                read_elem(&mem.buffers[param as usize], ty, i)
                    .ok_or_else(|| invalid(format!("buffer {param} read at {i}, out of range")))
            }
            Place::Shared { array, index } => {
                let i = t.vals[index as usize] as usize;
                match mem.shared[array as usize].get(i) {
                    Some(Some(v)) => Ok(*v),
                    Some(None) => Err(invalid(format!(
                        "shared array {array} read at {i} before any write"
                    ))),
                    None => Err(invalid(format!("shared array {array} read at {i}"))),
                }
            }
            Place::Local { array, index } => {
                let i = t.vals[index as usize] as usize;
                match t.locals[array as usize].get(i) {
                    Some(Some(v)) => Ok(*v),
                    _ => Err(invalid(format!(
                        "local array {array} read at {i} unwritten"
                    ))),
                }
            }
        }
    }

    /// Writes the place's element; `owned` for a plain store, which no other thread of the
    /// launch may make to the same buffer element (atomics may).
    fn store(
        &self,
        t: &mut Thread<'_>,
        mem: &mut Memory,
        place: &Place,
        bits: u64,
        owned: bool,
    ) -> Result<(), Fault> {
        let ty = self.p.elem(place);
        match *place {
            Place::Buffer { param, index } => {
                let i = t.vals[index as usize] as usize;
                let me = self.block_idx * self.p.block + t.tid;
                let first = match mem.writers[param as usize].get_mut(i) {
                    Some(slot) if owned => *slot.get_or_insert(me),
                    _ => me,
                };
                if first != me {
                    return Err(invalid(format!(
                        "buffer {param} element {i} stored by threads {first} and {me}"
                    )));
                }
                write_elem(&mut mem.buffers[param as usize], ty, i, bits)
                    .ok_or_else(|| invalid(format!("buffer {param} written at {i}")))
            }
            Place::Shared { array, index } => {
                let i = t.vals[index as usize] as usize;
                let slot = mem.shared[array as usize]
                    .get_mut(i)
                    .ok_or_else(|| invalid(format!("shared array {array} written at {i}")))?;
                *slot = Some(bits);
                Ok(())
            }
            Place::Local { array, index } => {
                let i = t.vals[index as usize] as usize;
                let slot = t.locals[array as usize]
                    .get_mut(i)
                    .ok_or_else(|| invalid(format!("local array {array} written at {i}")))?;
                *slot = Some(bits);
                Ok(())
            }
        }
    }

    /// The value of a node that involves no other lane.
    fn eval(&self, t: &mut Thread<'_>, mem: &mut Memory, node: &Node) -> Result<u64, Fault> {
        let types = &self.p.types;
        let v = |id: Id| t.vals[id as usize];
        let ty = |id: Id| types[id as usize];
        Ok(match *node {
            Node::Const(c) => c.bits,
            Node::Source(s) => self.source(t, s),
            Node::Scalar(i) => self.inputs.scalars[i as usize],
            Node::Unary(op, a) => {
                scalar::unary(op, ty(a), v(a)).map_err(|e| op_fault(e, &format!("{op:?}")))?
            }
            Node::Binary(op, a, b) => scalar::binary(op, ty(a), v(a), v(b))
                .map_err(|e| op_fault(e, &format!("{op:?}")))?,
            Node::MulAdd(a, b, c) => {
                scalar::mul_add(ty(a), v(a), v(b), v(c)).map_err(|e| op_fault(e, "MulAdd"))?
            }
            Node::Compare(op, a, b) => u64::from(scalar::compare(op, ty(a), v(a), v(b))),
            Node::Select(c, a, b) => {
                if v(c) != 0 {
                    v(a)
                } else {
                    v(b)
                }
            }
            Node::Cast(a, to) => scalar::cast(ty(a), to, v(a)),
            Node::Bitcast(a, _) => v(a),
            Node::ReadVar(var) => t.vars[var as usize],
            Node::Load(ref place) => self.load(t, mem, place)?,
            Node::Atomic {
                ref place,
                op,
                value,
                compare,
                ..
            } => {
                let old = self.load(t, mem, place)?;
                let ty = self.p.elem(place);
                let cmp = compare.map_or(0, v);
                let new = scalar::atomic(op, ty, old, v(value), cmp)
                    .map_err(|e| op_fault(e, &format!("atomic {op:?}")))?;
                if op != AtomicOp::CompareExchange || new != old {
                    self.store(t, mem, place, new, false)?;
                }
                old
            }
            Node::Shuffle(..) | Node::Vote(..) => {
                return Err(invalid("a warp operation evaluated alone"));
            }
        })
    }

    fn check(&self, t: &Thread<'_>, check: &Check) -> Result<(), Fault> {
        match *check {
            Check::Bounds { param, index } => {
                if t.vals[index as usize] >= u64::from(self.p.buffer_len(param)) {
                    return Err(Fault::Trap(TrapClass::Bounds));
                }
            }
            Check::Divisor { divisor } => {
                if t.vals[divisor as usize] == 0 {
                    return Err(Fault::Trap(TrapClass::DivideByZero));
                }
            }
        }
        Ok(())
    }

    /// Runs `t` until it finishes or stops before a collective statement.
    fn run(&self, t: &mut Thread<'p>, mem: &mut Memory) -> Result<(), Fault> {
        t.state = State::Running;
        loop {
            t.steps += 1;
            if t.steps > STEP_LIMIT {
                return Err(invalid("a thread ran too many statements (endless loop?)"));
            }
            let Some(frame) = t.frames.last_mut() else {
                t.state = State::Done;
                return Ok(());
            };
            if frame.pc >= frame.stmts.len() {
                if frame.is_loop {
                    frame.pc = 0;
                } else {
                    t.frames.pop();
                }
                continue;
            }
            let stmts = frame.stmts;
            let stmt = &stmts[frame.pc];
            frame.pc += 1;
            match stmt {
                Stmt::Def(_, Node::Shuffle(..) | Node::Vote(..)) => {
                    frame.pc -= 1;
                    t.state = State::AtWarpOp(stmt);
                    return Ok(());
                }
                Stmt::Barrier => {
                    frame.pc -= 1;
                    t.state = State::AtBarrier(stmt);
                    return Ok(());
                }
                Stmt::Def(id, node) => {
                    let bits = self.eval(t, mem, node)?;
                    t.vals[*id as usize] = bits;
                }
                Stmt::SetVar(var, value) => t.vars[*var as usize] = t.vals[*value as usize],
                Stmt::Store { place, value } => {
                    let bits = t.vals[*value as usize];
                    self.store(t, mem, place, bits, true)?;
                }
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let arm = if t.vals[*cond as usize] != 0 {
                        then
                    } else {
                        otherwise
                    };
                    t.frames.push(Frame {
                        stmts: arm,
                        pc: 0,
                        is_loop: false,
                    });
                }
                Stmt::Loop(body) => t.frames.push(Frame {
                    stmts: body,
                    pc: 0,
                    is_loop: true,
                }),
                Stmt::Break => loop {
                    match t.frames.pop() {
                        Some(f) if f.is_loop => break,
                        Some(_) => {}
                        None => return Err(invalid("break outside a loop")),
                    }
                },
                Stmt::Continue => loop {
                    match t.frames.last_mut() {
                        Some(f) if f.is_loop => {
                            f.pc = 0;
                            break;
                        }
                        Some(_) => {
                            t.frames.pop();
                        }
                        None => return Err(invalid("continue outside a loop")),
                    }
                },
                Stmt::Return => {
                    t.frames.clear();
                    t.state = State::Done;
                    return Ok(());
                }
                Stmt::Check(c) => self.check(t, c)?,
            }
        }
    }

    /// Resolves the warp operation `stmt` for the live lanes `lanes` of one warp (every one
    /// of them waits at it) and moves them past it.
    fn warp_op(&self, lanes: &mut [Thread<'p>], stmt: &Stmt) -> Result<(), Fault> {
        let Stmt::Def(id, node) = stmt else {
            return Err(invalid("not a warp operation"));
        };
        let live: u32 = lanes
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.state.done())
            .fold(0, |m, (l, _)| m | 1 << l);
        let results: Vec<u64> = match *node {
            Node::Vote(mode, pred) => {
                let votes = lanes
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| !t.state.done() && t.vals[pred as usize] != 0)
                    .fold(0u32, |m, (l, _)| m | 1 << l);
                let r = match mode {
                    VoteMode::All => u64::from(votes == live),
                    VoteMode::Any => u64::from(votes != 0),
                    VoteMode::Ballot => u64::from(votes),
                };
                vec![r; lanes.len()]
            }
            Node::Shuffle(mode, value, lane) => {
                let mut out = vec![0; lanes.len()];
                for (l, t) in lanes.iter().enumerate() {
                    if t.state.done() {
                        continue;
                    }
                    let l = l as u32;
                    let s = t.vals[lane as usize] as u32 & 31;
                    let src = match mode {
                        ShuffleMode::Idx => Some(s),
                        ShuffleMode::Up => l.checked_sub(s),
                        ShuffleMode::Down => Some(l + s).filter(|&x| x < 32),
                        ShuffleMode::Xor => Some(l ^ s),
                    }
                    .unwrap_or(l);
                    if live >> src & 1 == 0 {
                        return Err(invalid(format!(
                            "lane {l} shuffles from lane {src}, which has exited"
                        )));
                    }
                    out[l as usize] = lanes[src as usize].vals[value as usize];
                }
                out
            }
            _ => return Err(invalid("not a warp operation")),
        };
        for (t, r) in lanes.iter_mut().zip(results) {
            if t.state.done() {
                continue;
            }
            t.vals[*id as usize] = r;
            Self::step_past(t);
        }
        Ok(())
    }

    fn step_past(t: &mut Thread<'_>) {
        if let Some(f) = t.frames.last_mut() {
            f.pc += 1;
        }
        t.state = State::Running;
    }

    /// Runs the whole block.
    fn run_block(&self, mem: &mut Memory) -> Result<(), Fault> {
        let p = self.p;
        let mut threads: Vec<Thread<'p>> = (0..p.block)
            .map(|tid| Thread {
                vals: vec![0; p.types.len()],
                vars: vec![0; p.vars.len()],
                locals: p
                    .locals
                    .iter()
                    .map(|a| vec![None; a.len as usize])
                    .collect(),
                frames: vec![Frame {
                    stmts: &p.body,
                    pc: 0,
                    is_loop: false,
                }],
                state: State::Running,
                tid,
                steps: 0,
            })
            .collect();
        mem.shared = p
            .shared
            .iter()
            .map(|a| vec![None; a.len as usize])
            .collect();
        loop {
            for t in threads.iter_mut() {
                if t.state.running() {
                    self.run(t, mem)?;
                }
            }
            let mut progressed = false;
            for warp in threads.chunks_mut(32) {
                let mut waiting = warp.iter().filter(|t| !t.state.done());
                let Some(first) = waiting.next().map(|t| t.state) else {
                    continue;
                };
                let State::AtWarpOp(stmt) = first else {
                    continue;
                };
                if let Some(other) = waiting.find(|t| !t.state.same(&first)) {
                    return Err(invalid(format!(
                        "thread {} is elsewhere ({:?}) while its warp waits at a warp \
                         operation",
                        other.tid, other.state
                    )));
                }
                self.warp_op(warp, stmt)?;
                progressed = true;
            }
            if progressed {
                continue;
            }
            let mut live = threads.iter().filter(|t| !t.state.done());
            let Some(first) = live.next().map(|t| t.state) else {
                return Ok(());
            };
            if !matches!(first, State::AtBarrier(_)) {
                return Err(invalid(format!("the block is stuck ({first:?})")));
            }
            if let Some(other) = live.find(|t| !t.state.same(&first)) {
                return Err(invalid(format!(
                    "thread {} waits elsewhere ({:?}) than others ({first:?}) at a barrier",
                    other.tid, other.state
                )));
            }
            for t in threads.iter_mut().filter(|t| !t.state.done()) {
                Self::step_past(t);
            }
        }
    }
}

/// Evaluates `program` on `inputs`: every buffer's final bytes, or the fault.
pub fn run(program: &Program, inputs: &Inputs) -> Outcome {
    let mut mem = Memory {
        buffers: inputs.buffers.clone(),
        shared: Vec::new(),
        writers: (0..inputs.buffers.len() as u32)
            .map(|p| vec![None; program.buffer_len(p) as usize])
            .collect(),
    };
    for (i, p) in program.params.iter().enumerate() {
        if let Param::Buffer { elem, .. } = p {
            let want = program.buffer_len(i as u32) as usize * elem.size_bytes() as usize;
            if mem.buffers[i].len() != want {
                return Err(invalid(format!("buffer {i} has the wrong size")));
            }
        }
    }
    for block_idx in 0..program.grid {
        let block = Block {
            p: program,
            inputs,
            block_idx,
        };
        block.run_block(&mut mem)?;
    }
    Ok(mem.buffers)
}
