//! Code generation: traced graphs become kernel IR.
//!
//! * this file: [`Gen`], a thin layer over `KernelBuilder` (typed helpers, structured
//!   control flow with closures, uniforms as parameters), and the lowering of a [`Graph`]
//!   for one element ([`Gen::lower`]);
//! * `traverse`: the loops that visit the elements (grid-stride or per-block chunks, several
//!   consecutive elements per thread and iteration, then a scalar tail);
//! * `block`: block-wide reduction and exclusive scan (warp shuffles + shared memory);
//! * `kernels`: the kernels themselves (map, reduce partials, reduce final, filter count,
//!   filter scatter).
//!
//! Every error here is an internal one (the graph was typed by Rust already) and comes back
//! as a `String` that the caller wraps into `Error::Compile`.

mod block;
pub(crate) mod kernels;
mod traverse;

use std::collections::{HashMap, HashSet};

use cuprum_ir::{
    AddressSpace, BinaryOp, Block, CmpOp, Constant, Dim, Kernel, KernelBuilder, LaunchBounds, Op,
    ParamKind, ScalarType, SliceAccess, Special, Stmt, TernaryOp, TrapKind, Value, Var,
};

use crate::trace::{Graph, Node, NodeId};

pub(crate) type R<T> = Result<T, String>;

/// A kernel under construction.
pub(crate) struct Gen {
    b: KernelBuilder,
    /// Host values, each one scalar parameter, defined at the top of the body.
    uniforms: HashMap<Constant, Value>,
    /// The uniform constants in parameter order (the launch passes them in this order).
    pub(crate) uniform_list: Vec<Constant>,
}

/// One accumulator of a reduction: its type, its identity (a host value, so a parameter) and
/// its combining function, a graph over `Arg(0)` and `Arg(1)`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Accum {
    pub(crate) ty: ScalarType,
    pub(crate) identity: Constant,
    pub(crate) combine: Graph,
    pub(crate) root: NodeId,
}

impl Gen {
    /// `combine(a, b)` of accumulator `acc`.
    pub(crate) fn combine(&mut self, acc: &Accum, a: Value, b: Value) -> R<Value> {
        let args = [a, b];
        let env = Env {
            args: &args,
            ..Env::default()
        };
        let v = self.lower(&acc.combine, &[acc.root], &env)?;
        v.first()
            .copied()
            .ok_or_else(|| "internal error: empty combine".to_owned())
    }
}

/// What the leaves of a graph stand for while lowering one element.
#[derive(Default)]
pub(crate) struct Env<'a> {
    /// The loaded element of each input slot (`None`: not loaded, so not used).
    pub(crate) inputs: &'a [Option<Value>],
    /// The element's index (`U64`).
    pub(crate) index: Option<Value>,
    /// The arguments of a combining function.
    pub(crate) args: &'a [Value],
}

impl Gen {
    pub(crate) fn new(name: &str, block: u32, blocks_per_sm: u32) -> Self {
        let mut b = KernelBuilder::new(name);
        let min_blocks = (block * blocks_per_sm <= 2048).then_some(blocks_per_sm);
        b.set_launch_bounds(Some(LaunchBounds {
            max_threads: block,
            min_blocks_per_sm: min_blocks,
        }));
        Self {
            b,
            uniforms: HashMap::new(),
            uniform_list: Vec::new(),
        }
    }

    pub(crate) fn finish(self) -> Kernel {
        self.b.finish()
    }

    pub(crate) fn slice_param(&mut self, name: &str, elem: ScalarType, access: SliceAccess) -> u32 {
        self.b.param(name, ParamKind::Slice { elem, access })
    }

    pub(crate) fn scalar_param(&mut self, name: &str, ty: ScalarType) -> R<Value> {
        let p = self.b.param(name, ParamKind::Scalar(ty));
        self.def(Op::Param(p))
    }

    /// Makes every [`Node::Uniform`] of `graphs` (and `extra`) a scalar parameter, defined
    /// at the top level so that every later block sees it. Call after the other parameters.
    pub(crate) fn declare_uniforms(&mut self, graphs: &[&Graph], extra: &[Constant]) -> R<()> {
        for c in uniform_order(graphs, extra) {
            let name = format!("u{}", self.uniform_list.len());
            let v = self.scalar_param(&name, c.ty)?;
            self.uniforms.insert(c, v);
            self.uniform_list.push(c);
        }
        Ok(())
    }

    /// The parameter holding host value `c` (declared by [`declare_uniforms`](Self::declare_uniforms)).
    pub(crate) fn uniform(&self, c: Constant) -> R<Value> {
        self.uniforms
            .get(&c)
            .copied()
            .ok_or_else(|| format!("internal error: uniform {c} was not declared"))
    }

    pub(crate) fn def(&mut self, op: Op) -> R<Value> {
        Ok(self.b.def(op)?)
    }

    pub(crate) fn konst(&mut self, c: Constant) -> Value {
        self.b.constant(c)
    }

    pub(crate) fn u64(&mut self, v: u64) -> Value {
        self.konst(Constant::u64(v))
    }

    pub(crate) fn u32(&mut self, v: u32) -> Value {
        self.konst(Constant::u32(v))
    }

    pub(crate) fn bin(&mut self, op: BinaryOp, a: Value, b: Value) -> R<Value> {
        Ok(self.b.binary(op, a, b)?)
    }

    pub(crate) fn add(&mut self, a: Value, b: Value) -> R<Value> {
        self.bin(BinaryOp::Add, a, b)
    }

    pub(crate) fn mul(&mut self, a: Value, b: Value) -> R<Value> {
        self.bin(BinaryOp::Mul, a, b)
    }

    pub(crate) fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> R<Value> {
        Ok(self.b.compare(op, a, b)?)
    }

    pub(crate) fn select(&mut self, cond: Value, t: Value, f: Value) -> R<Value> {
        Ok(self.b.select(cond, t, f)?)
    }

    pub(crate) fn cast(&mut self, value: Value, to: ScalarType) -> R<Value> {
        Ok(self.b.cast(value, to)?)
    }

    pub(crate) fn bitcast(&mut self, value: Value, to: ScalarType) -> R<Value> {
        Ok(self.b.bitcast(value, to)?)
    }

    pub(crate) fn special(&mut self, s: Special) -> R<Value> {
        self.def(Op::Special(s))
    }

    pub(crate) fn tid(&mut self) -> R<Value> {
        self.special(Special::ThreadIdx(Dim::X))
    }

    pub(crate) fn load(&mut self, space: AddressSpace, ty: ScalarType, addr: Value) -> R<Value> {
        self.def(Op::Load {
            space,
            ty,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        })
    }

    pub(crate) fn store(&mut self, space: AddressSpace, addr: Value, value: Value) {
        self.b.push(Stmt::Store { space, addr, value });
    }

    /// `lanes` consecutive `ty` elements at `addr` (aligned to the whole vector).
    pub(crate) fn vector_load(
        &mut self,
        space: AddressSpace,
        ty: ScalarType,
        addr: Value,
        lanes: usize,
    ) -> R<Vec<Value>> {
        Ok(self.b.vector_load(space, ty, addr, lanes)?)
    }

    /// Stores `values` to consecutive elements at `addr` (aligned to the whole vector).
    pub(crate) fn vector_store(
        &mut self,
        space: AddressSpace,
        addr: Value,
        values: Vec<Value>,
    ) -> R<()> {
        Ok(self.b.vector_store(space, addr, values)?)
    }

    pub(crate) fn barrier(&mut self) {
        self.b.push(Stmt::Barrier);
    }

    pub(crate) fn shared_array(&mut self, name: &str, elem: ScalarType, len: u32) -> R<Value> {
        let i = self.b.shared_array(cuprum_ir::ArrayDecl {
            name: name.to_owned(),
            elem,
            len,
        });
        self.def(Op::SharedAddr(i))
    }

    /// The shared address of element `i` (`U32`) of an array of `ty` at `base`.
    pub(crate) fn shared_elem(&mut self, base: Value, i: Value, ty: ScalarType) -> R<Value> {
        let size = self.u32(ty.size_bytes());
        let off = self.mul(i, size)?;
        self.add(base, off)
    }

    /// The global address of element `idx` (`U64`) of a slice whose base address is `base`.
    pub(crate) fn global_elem(&mut self, base: Value, idx: Value, ty: ScalarType) -> R<Value> {
        let size = self.u64(u64::from(ty.size_bytes()));
        let off = self.mul(idx, size)?;
        self.add(base, off)
    }

    /// A mutable variable set to `init`.
    pub(crate) fn var(&mut self, name: &str, init: Value) -> Var {
        let ty = self.b.type_of(init);
        let var = self.b.var(name, ty);
        self.b.push(Stmt::WriteVar { var, value: init });
        var
    }

    pub(crate) fn read(&mut self, var: Var) -> R<Value> {
        self.def(Op::ReadVar(var))
    }

    pub(crate) fn write(&mut self, var: Var, value: Value) {
        self.b.push(Stmt::WriteVar { var, value });
    }

    fn block(&mut self, body: impl FnOnce(&mut Gen) -> R<()>) -> R<Block> {
        self.b.begin_block();
        let result = body(self);
        let block = self.b.end_block();
        result.map(|()| block)
    }

    /// `if cond { then }`.
    pub(crate) fn if_(&mut self, cond: Value, then: impl FnOnce(&mut Gen) -> R<()>) -> R<()> {
        let then = self.block(then)?;
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise: Block::default(),
        });
        Ok(())
    }

    /// `if cond { arm(true) } else { arm(false) }`.
    pub(crate) fn if_else(
        &mut self,
        cond: Value,
        mut arm: impl FnMut(&mut Gen, bool) -> R<()>,
    ) -> R<()> {
        let then = self.block(|g| arm(g, true))?;
        let otherwise = self.block(|g| arm(g, false))?;
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
        Ok(())
    }

    /// `loop { body }`.
    pub(crate) fn loop_(&mut self, body: impl FnOnce(&mut Gen) -> R<()>) -> R<()> {
        let body = self.block(body)?;
        self.b.push(Stmt::Loop { body });
        Ok(())
    }

    /// `if !cond { break }`.
    pub(crate) fn break_unless(&mut self, cond: Value) {
        self.b.push(Stmt::If {
            cond,
            then: Block::default(),
            otherwise: Block {
                stmts: vec![Stmt::Break],
            },
        });
    }

    pub(crate) fn type_of(&self, v: Value) -> ScalarType {
        self.b.type_of(v)
    }

    /// Lowers the nodes of `graph` that `roots` need, for one element described by `env`,
    /// and gives the value of each root.
    pub(crate) fn lower(&mut self, graph: &Graph, roots: &[NodeId], env: &Env) -> R<Vec<Value>> {
        let needed = graph.reachable(roots);
        let mut values: Vec<Option<Value>> = vec![None; graph.nodes.len()];
        for (id, &(node, ty)) in graph.nodes.iter().enumerate() {
            if !needed[id] {
                continue;
            }
            let get = |n: NodeId| {
                values
                    .get(n as usize)
                    .copied()
                    .flatten()
                    .ok_or_else(|| format!("internal error: node {n} lowered out of order"))
            };
            let v = match node {
                Node::Input(slot) => env
                    .inputs
                    .get(slot as usize)
                    .copied()
                    .flatten()
                    .ok_or_else(|| format!("internal error: input {slot} was not loaded"))?,
                Node::Index => env.index.ok_or("internal error: no element index here")?,
                Node::Arg(k) => env
                    .args
                    .get(k as usize)
                    .copied()
                    .ok_or_else(|| format!("internal error: no argument {k}"))?,
                Node::Uniform(c) => self.uniform(c)?,
                Node::Unary(op, a) => self.def(Op::Unary(op, get(a)?))?,
                Node::Binary(op, a, b) => self.bin(op, get(a)?, get(b)?)?,
                Node::IntDiv { op, a, b, guard } => {
                    let guard = guard.map(get).transpose()?;
                    self.int_div(op, get(a)?, get(b)?, guard, ty)?
                }
                Node::MulAdd(a, b, c) => {
                    self.def(Op::Ternary(TernaryOp::MulAdd, get(a)?, get(b)?, get(c)?))?
                }
                Node::Compare(op, a, b) => self.cmp(op, get(a)?, get(b)?)?,
                Node::Select(c, a, b) => self.select(get(c)?, get(a)?, get(b)?)?,
                Node::Cast(a, to) => self.cast(get(a)?, to)?,
            };
            values[id] = Some(v);
        }
        roots
            .iter()
            .map(|&r| {
                values
                    .get(r as usize)
                    .copied()
                    .flatten()
                    .ok_or_else(|| format!("internal error: root {r} not lowered"))
            })
            .collect()
    }

    /// Integer `a / b` or `a % b` with Rust's checks: a zero divisor, or `MIN / -1` on a
    /// signed type, stops the kernel (when `guard`, the filter condition, holds). The
    /// division itself always gets a safe divisor, so that elements a filter dropped never
    /// break the IR's precondition.
    fn int_div(
        &mut self,
        op: BinaryOp,
        a: Value,
        b: Value,
        guard: Option<Value>,
        ty: ScalarType,
    ) -> R<Value> {
        let zero = self.konst(Constant::new(ty, 0));
        let one = self.konst(Constant::new(ty, 1));
        let is_zero = self.cmp(CmpOp::Eq, b, zero)?;
        let checked = |g: &mut Gen, bad: Value| match guard {
            Some(guard) => g.bin(BinaryOp::And, bad, guard),
            None => Ok(bad),
        };
        let trap_zero = checked(self, is_zero)?;
        self.if_(trap_zero, |g| {
            g.b.push(Stmt::Trap(TrapKind::DivideByZero {
                site: format!(
                    "integer {} in an iterator closure",
                    if op == BinaryOp::Div {
                        "division"
                    } else {
                        "remainder"
                    }
                ),
            }));
            Ok(())
        })?;
        let mut bad = is_zero;
        if ty.is_signed_int() {
            let min = self.konst(Constant::new(ty, 1u64 << (ty.bits() - 1)));
            let minus_one = self.konst(Constant::new(ty, u64::MAX));
            let a_min = self.cmp(CmpOp::Eq, a, min)?;
            let b_m1 = self.cmp(CmpOp::Eq, b, minus_one)?;
            let overflow = self.bin(BinaryOp::And, a_min, b_m1)?;
            let trap_overflow = checked(self, overflow)?;
            self.if_(trap_overflow, |g| {
                g.b.push(Stmt::Trap(TrapKind::Assert {
                    message: format!(
                        "attempt to {} with overflow ({ty}::MIN by -1) in an iterator closure",
                        if op == BinaryOp::Div {
                            "divide"
                        } else {
                            "calculate the remainder"
                        }
                    ),
                }));
                Ok(())
            })?;
            bad = self.bin(BinaryOp::Or, is_zero, overflow)?;
        }
        let safe_b = self.select(bad, one, b)?;
        self.bin(op, a, safe_b)
    }

    /// `value`'s bits, zero-extended to `U64` (to keep values of any type in one buffer).
    pub(crate) fn bits_of(&mut self, value: Value) -> R<Value> {
        let ty = self.type_of(value);
        if ty == ScalarType::Bool {
            return self.cast(value, ScalarType::U64);
        }
        let unsigned = unsigned_of(ty);
        let u = self.bitcast(value, unsigned)?;
        self.cast(u, ScalarType::U64)
    }

    /// The inverse of [`bits_of`](Self::bits_of).
    pub(crate) fn value_of_bits(&mut self, word: Value, ty: ScalarType) -> R<Value> {
        if ty == ScalarType::Bool {
            let zero = self.u64(0);
            return self.cmp(CmpOp::Ne, word, zero);
        }
        let u = self.cast(word, unsigned_of(ty))?;
        self.bitcast(u, ty)
    }
}

/// The distinct host values of `graphs` (their [`Node::Uniform`]s, in node order) and then
/// `extra`, in the order [`Gen::declare_uniforms`] makes them parameters: the launch passes
/// them in this order, and kernels are cached by where each value sits in it.
pub(crate) fn uniform_order(graphs: &[&Graph], extra: &[Constant]) -> Vec<Constant> {
    let mut order: Vec<Constant> = Vec::new();
    let mut seen: HashSet<Constant> = HashSet::new();
    let consts = graphs
        .iter()
        .flat_map(|g| g.nodes.iter())
        .filter_map(|(n, _)| match n {
            Node::Uniform(c) => Some(*c),
            _ => None,
        })
        .chain(extra.iter().copied());
    for c in consts {
        if seen.insert(c) {
            order.push(c);
        }
    }
    order
}

/// The unsigned integer type of `ty`'s size.
fn unsigned_of(ty: ScalarType) -> ScalarType {
    match ty.size_bytes() {
        1 => ScalarType::U8,
        2 => ScalarType::U16,
        4 => ScalarType::U32,
        _ => ScalarType::U64,
    }
}
