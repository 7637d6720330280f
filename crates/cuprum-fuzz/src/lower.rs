//! Lowering a [`Program`] to a `cuprum_ir::Kernel` with the IR's builder: one IR statement
//! (or a short, fixed sequence) per program statement, places turned into address
//! arithmetic, checks into `If`s with a `Trap`, as the SIMT front end lowers them.

use cuprum_ir::{
    AddressSpace, ArrayDecl, BinaryOp, CmpOp, Constant, Dim, Kernel, KernelBuilder, Op, ParamKind,
    ScalarType, SliceAccess, Special, Stmt as IrStmt, TrapKind, Value,
};

use crate::program::{Check, Id, Node, Param, Place, Program, Role, Source, Stmt};

/// Why a program could not be lowered: the builder refused an operation (a generator bug).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerError(pub String);

impl std::fmt::Display for LowerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot lower the program: {}", self.0)
    }
}

impl std::error::Error for LowerError {}

struct Lowering<'p> {
    p: &'p Program,
    b: KernelBuilder,
    values: Vec<Option<Value>>,
    vars: Vec<cuprum_ir::Var>,
}

impl Lowering<'_> {
    fn def(&mut self, op: Op) -> Result<Value, LowerError> {
        self.b.def(op).map_err(|e| LowerError(e.reason))
    }

    fn v(&self, id: Id) -> Result<Value, LowerError> {
        self.values
            .get(id as usize)
            .copied()
            .flatten()
            .ok_or_else(|| LowerError(format!("value v{id} used before its definition")))
    }

    fn special(&mut self, s: Special) -> Result<Value, LowerError> {
        self.def(Op::Special(s))
    }

    fn source(&mut self, s: Source) -> Result<Value, LowerError> {
        Ok(match s {
            Source::ThreadIdx => self.special(Special::ThreadIdx(Dim::X))?,
            Source::LaneId => self.special(Special::LaneId)?,
            Source::BlockIdx => self.special(Special::BlockIdx(Dim::X))?,
            Source::BlockDim => self.special(Special::BlockDim(Dim::X))?,
            Source::GridDim => self.special(Special::GridDim(Dim::X))?,
            Source::GlobalId => {
                let b = self.special(Special::BlockIdx(Dim::X))?;
                let d = self.special(Special::BlockDim(Dim::X))?;
                let t = self.special(Special::ThreadIdx(Dim::X))?;
                let bd = self.def(Op::Binary(BinaryOp::Mul, b, d))?;
                self.def(Op::Binary(BinaryOp::Add, bd, t))?
            }
        })
    }

    /// The address of a place and its memory space.
    fn address(&mut self, place: &Place) -> Result<(AddressSpace, Value), LowerError> {
        let size = self.p.elem(place).size_bytes();
        match *place {
            Place::Buffer { param, index } => {
                let base = self.def(Op::SliceBase(param))?;
                let i = self.v(index)?;
                let wide = self.def(Op::Cast {
                    value: i,
                    to: ScalarType::U64,
                })?;
                let s = self.b.constant(Constant::u64(u64::from(size)));
                let off = self.def(Op::Binary(BinaryOp::Mul, wide, s))?;
                Ok((
                    AddressSpace::Global,
                    self.def(Op::Binary(BinaryOp::Add, base, off))?,
                ))
            }
            Place::Shared { array, index } | Place::Local { array, index } => {
                let (space, base) = match place {
                    Place::Shared { .. } => (AddressSpace::Shared, Op::SharedAddr(array)),
                    _ => (AddressSpace::Local, Op::LocalAddr(array)),
                };
                let base = self.def(base)?;
                let i = self.v(index)?;
                let s = self.b.constant(Constant::u32(size));
                let off = self.def(Op::Binary(BinaryOp::Mul, i, s))?;
                Ok((space, self.def(Op::Binary(BinaryOp::Add, base, off))?))
            }
        }
    }

    fn node(&mut self, node: &Node) -> Result<Value, LowerError> {
        let op = match *node {
            Node::Const(c) => return Ok(self.b.constant(c)),
            Node::Source(s) => return self.source(s),
            Node::Scalar(i) => Op::Param(i),
            Node::Unary(u, a) => Op::Unary(u, self.v(a)?),
            Node::Binary(o, a, b) => Op::Binary(o, self.v(a)?, self.v(b)?),
            Node::MulAdd(a, b, c) => Op::Ternary(
                cuprum_ir::TernaryOp::MulAdd,
                self.v(a)?,
                self.v(b)?,
                self.v(c)?,
            ),
            Node::Compare(c, a, b) => Op::Compare(c, self.v(a)?, self.v(b)?),
            Node::Select(c, t, f) => Op::Select {
                cond: self.v(c)?,
                if_true: self.v(t)?,
                if_false: self.v(f)?,
            },
            Node::Cast(a, to) => Op::Cast {
                value: self.v(a)?,
                to,
            },
            Node::Bitcast(a, to) => Op::Bitcast {
                value: self.v(a)?,
                to,
            },
            Node::ReadVar(var) => Op::ReadVar(self.vars[var as usize]),
            Node::Load(ref place) => {
                let ty = self.p.elem(place);
                let (space, addr) = self.address(place)?;
                Op::Load {
                    space,
                    ty,
                    addr,
                    eviction: cuprum_ir::Eviction::Normal,
                }
            }
            Node::Shuffle(mode, value, lane) => Op::Shuffle {
                mode,
                value: self.v(value)?,
                lane: self.v(lane)?,
            },
            Node::Vote(mode, pred) => Op::Vote {
                mode,
                pred: self.v(pred)?,
            },
            Node::Atomic {
                ref place,
                op,
                scope,
                value,
                compare,
            } => {
                let (space, addr) = self.address(place)?;
                Op::Atomic {
                    op,
                    space,
                    scope,
                    order: cuprum_ir::MemOrder::Relaxed,
                    addr,
                    value: self.v(value)?,
                    compare: compare.map(|c| self.v(c)).transpose()?,
                }
            }
        };
        self.def(op)
    }

    /// `if ok {} else { trap }`.
    fn guard(&mut self, ok: Value, trap: TrapKind) {
        self.b.begin_block();
        let then = self.b.end_block();
        self.b.begin_block();
        self.b.push(IrStmt::Trap(trap));
        let otherwise = self.b.end_block();
        self.b.push(IrStmt::If {
            cond: ok,
            then,
            otherwise,
        });
    }

    fn block(&mut self, stmts: &[Stmt]) -> Result<cuprum_ir::Block, LowerError> {
        self.b.begin_block();
        self.stmts(stmts)?;
        Ok(self.b.end_block())
    }

    fn stmts(&mut self, stmts: &[Stmt]) -> Result<(), LowerError> {
        for s in stmts {
            match s {
                Stmt::Def(id, node) => {
                    let v = self.node(node)?;
                    let (got, want) = (self.b.type_of(v), self.p.types[*id as usize]);
                    if got != want {
                        return Err(LowerError(format!(
                            "v{id} is recorded as {want} but {node:?} gives {got}"
                        )));
                    }
                    self.values[*id as usize] = Some(v);
                }
                Stmt::SetVar(var, value) => {
                    let value = self.v(*value)?;
                    self.b.push(IrStmt::WriteVar {
                        var: self.vars[*var as usize],
                        value,
                    });
                }
                Stmt::Store { place, value } => {
                    let value = self.v(*value)?;
                    let (space, addr) = self.address(place)?;
                    self.b.push(IrStmt::Store { space, addr, value });
                }
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let cond = self.v(*cond)?;
                    let then = self.block(then)?;
                    let otherwise = self.block(otherwise)?;
                    self.b.push(IrStmt::If {
                        cond,
                        then,
                        otherwise,
                    });
                }
                Stmt::Loop(body) => {
                    let body = self.block(body)?;
                    self.b.push(IrStmt::Loop { body });
                }
                Stmt::Break => self.b.push(IrStmt::Break),
                Stmt::Continue => self.b.push(IrStmt::Continue),
                Stmt::Return => self.b.push(IrStmt::Return),
                Stmt::Barrier => self.b.push(IrStmt::Barrier),
                Stmt::Check(Check::Bounds { param, index }) => {
                    let i = self.v(*index)?;
                    let index = self.def(Op::Cast {
                        value: i,
                        to: ScalarType::U64,
                    })?;
                    let len = self.def(Op::SliceLen(*param))?;
                    let ok = self.def(Op::Compare(CmpOp::Lt, index, len))?;
                    let site = format!("buffer{param}[i]");
                    self.guard(ok, TrapKind::BoundsCheck { index, len, site });
                }
                Stmt::Check(Check::Divisor { divisor }) => {
                    let d = self.v(*divisor)?;
                    let ty = self.b.type_of(d);
                    let zero = self.b.constant(Constant::new(ty, 0));
                    let ok = self.def(Op::Compare(CmpOp::Ne, d, zero))?;
                    let site = "a / b".to_string();
                    self.guard(ok, TrapKind::DivideByZero { site });
                }
            }
        }
        Ok(())
    }
}

/// The IR kernel of `program`, validated.
pub fn lower(program: &Program) -> Result<Kernel, LowerError> {
    let mut b = KernelBuilder::new(program.name.clone());
    for (i, p) in program.params.iter().enumerate() {
        let kind = match *p {
            Param::Scalar(ty) => ParamKind::Scalar(ty),
            Param::Buffer { elem, role } => ParamKind::Slice {
                elem,
                access: match role {
                    Role::Input { .. } => SliceAccess::ReadOnly,
                    Role::Output { .. } | Role::Private => SliceAccess::Disjoint,
                    Role::Counters { .. } => SliceAccess::ReadWrite,
                },
            },
        };
        b.param(format!("p{i}"), kind);
    }
    for (i, a) in program.shared.iter().enumerate() {
        b.shared_array(ArrayDecl {
            name: format!("sh{i}"),
            elem: a.elem,
            len: a.len,
        });
    }
    for (i, a) in program.locals.iter().enumerate() {
        b.local_array(ArrayDecl {
            name: format!("loc{i}"),
            elem: a.elem,
            len: a.len,
        });
    }
    let vars = program
        .vars
        .iter()
        .enumerate()
        .map(|(i, &ty)| b.var(format!("x{i}"), ty))
        .collect();
    if program.declare_block {
        b.set_block(Some((program.block, 1, 1)));
    }
    let mut l = Lowering {
        p: program,
        b,
        values: vec![None; program.types.len()],
        vars,
    };
    l.stmts(&program.body)?;
    let kernel = l.b.finish();
    cuprum_ir::validate_kernel(&kernel).map_err(|e| LowerError(e.to_string()))?;
    Ok(kernel)
}
