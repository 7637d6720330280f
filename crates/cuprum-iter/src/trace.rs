//! Tracing: how the closures of a chain become a graph of operations, once per terminal call,
//! without ever running on an element.
//!
//! A terminal operation (`collect`, `sum`, ...) opens a [`TraceGuard`], calls the chain's
//! closures once with [`Expr`](crate::Expr) handles, and closes it. Every operator on an
//! `Expr` appends a [`Node`] to the innermost open trace of the current thread (a stack, so a
//! closure may itself run another chain). Nodes are hash-consed, so the graph is already free
//! of common subexpressions, and kept in creation order, which is a topological order.
//!
//! An `Expr` remembers which trace made it. One that outlives its trace (smuggled out of a
//! closure through a `Cell`, say) or that was computed outside any closure cannot be looked up:
//! using it records an error in the trace, and the terminal call returns it. Host scalars
//! (`x * 2.0`, a captured `f32`) travel inside the `Expr` as constants until an operation
//! needs them; then they become [`Node::Uniform`]s, which the code generator turns into kernel
//! parameters, so the same closure with another captured value reuses the compiled kernel.
//!
//! This module knows nothing about devices or IR statements; `codegen` lowers the graph.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use cuprum_ir::{BinaryOp, CmpOp, Constant, ScalarType, UnaryOp};

/// Index of a node in its [`Graph`].
pub(crate) type NodeId = u32;

/// One operation of a traced graph. Operands are earlier nodes of the same graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Node {
    /// The current element of input slot `k` (a slice parameter of the kernel).
    Input(u32),
    /// The current element's index (`U64`), for `enumerate`.
    Index,
    /// Argument `k` of a combining function (`reduce`'s `op`).
    Arg(u32),
    /// A host value; becomes a kernel parameter.
    Uniform(Constant),
    Unary(UnaryOp, NodeId),
    /// Any binary operation except integer `Div`/`Rem`.
    Binary(BinaryOp, NodeId, NodeId),
    /// Integer `Div` or `Rem`: the code generator checks the divisor (zero, and `MIN / -1` on
    /// signed types) and traps, as Rust panics. `guard` is the filter condition in force when
    /// the division was traced: elements that a `filter` dropped are not checked, since Rust
    /// would never have divided them.
    IntDiv {
        op: BinaryOp,
        a: NodeId,
        b: NodeId,
        guard: Option<NodeId>,
    },
    MulAdd(NodeId, NodeId, NodeId),
    Compare(CmpOp, NodeId, NodeId),
    Select(NodeId, NodeId, NodeId),
    Cast(NodeId, ScalarType),
}

impl Node {
    /// The nodes this one reads.
    pub(crate) fn operands(&self) -> Vec<NodeId> {
        match *self {
            Node::Input(_) | Node::Index | Node::Arg(_) | Node::Uniform(_) => Vec::new(),
            Node::Unary(_, a) | Node::Cast(a, _) => vec![a],
            Node::Binary(_, a, b) | Node::Compare(_, a, b) => vec![a, b],
            Node::IntDiv { a, b, guard, .. } => {
                let mut v = vec![a, b];
                v.extend(guard);
                v
            }
            Node::MulAdd(a, b, c) | Node::Select(a, b, c) => vec![a, b, c],
        }
    }
}

/// A traced computation: nodes in creation (topological) order, each with its type.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Graph {
    pub(crate) nodes: Vec<(Node, ScalarType)>,
}

impl Graph {
    pub(crate) fn node(&self, id: NodeId) -> Option<(Node, ScalarType)> {
        self.nodes.get(id as usize).copied()
    }

    /// Which nodes the `roots` depend on (themselves included), by node index.
    pub(crate) fn reachable(&self, roots: &[NodeId]) -> Vec<bool> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<NodeId> = roots.to_vec();
        while let Some(id) = stack.pop() {
            let Some(slot) = seen.get_mut(id as usize) else {
                continue;
            };
            if std::mem::replace(slot, true) {
                continue;
            }
            if let Some((node, _)) = self.node(id) {
                stack.extend(node.operands());
            }
        }
        seen
    }
}

/// Where an [`Expr`](crate::Expr)'s value comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ref {
    /// Node `id` of the trace numbered `trace`.
    Node { trace: u32, id: NodeId },
    /// A host value not yet placed in any trace.
    Const(Constant),
    /// Computed outside any trace: unusable (using it is an error of the trace that tries).
    Invalid,
}

struct Trace {
    id: u32,
    graph: Graph,
    dedup: HashMap<Node, NodeId>,
    /// The first error met while tracing.
    error: Option<String>,
    /// The filter condition in force (see [`Node::IntDiv`]).
    guard: Option<NodeId>,
}

impl Trace {
    fn intern(&mut self, node: Node, ty: ScalarType) -> NodeId {
        if let Some(&id) = self.dedup.get(&node) {
            return id;
        }
        let id = self.graph.nodes.len() as NodeId;
        self.graph.nodes.push((node, ty));
        self.dedup.insert(node, id);
        id
    }

    fn fail(&mut self, message: String) {
        self.error.get_or_insert(message);
    }

    fn resolve(&mut self, r: Ref) -> Option<NodeId> {
        match r {
            Ref::Node { trace, id } if trace == self.id => Some(id),
            Ref::Node { .. } => {
                self.fail(
                    "a traced value (`Expr`) from another chain was used: values made inside \
                     one chain's closures cannot be kept and used in another chain; pass host \
                     values (plain numbers) instead"
                        .to_owned(),
                );
                None
            }
            Ref::Const(c) => Some(self.intern(Node::Uniform(c), c.ty)),
            Ref::Invalid => {
                self.fail(
                    "a traced value (`Expr`) computed outside a chain's closures was used: \
                     operations on `Expr` only mean something inside the closures given to \
                     `map`, `filter` or `reduce`; compute host values with plain numbers"
                        .to_owned(),
                );
                None
            }
        }
    }
}

thread_local! {
    static TRACES: RefCell<Vec<Trace>> = const { RefCell::new(Vec::new()) };
}

static NEXT_TRACE: AtomicU32 = AtomicU32::new(1);

/// Records `make(operands)` of type `ty` in the innermost open trace, or gives
/// [`Ref::Invalid`] when no trace is open or an operand cannot be used.
pub(crate) fn record(
    ty: ScalarType,
    operands: &[Ref],
    make: impl FnOnce(&[NodeId]) -> Node,
) -> Ref {
    TRACES.with(|traces| {
        let Ok(mut traces) = traces.try_borrow_mut() else {
            return Ref::Invalid;
        };
        let Some(trace) = traces.last_mut() else {
            return Ref::Invalid;
        };
        let mut ids = Vec::with_capacity(operands.len());
        for &r in operands {
            match trace.resolve(r) {
                Some(id) => ids.push(id),
                None => return Ref::Invalid,
            }
        }
        let node = make(&ids);
        Ref::Node {
            trace: trace.id,
            id: trace.intern(node, ty),
        }
    })
}

/// The filter condition currently in force in the innermost trace.
pub(crate) fn current_guard() -> Option<NodeId> {
    TRACES.with(|traces| {
        traces
            .try_borrow()
            .ok()
            .and_then(|t| t.last().and_then(|t| t.guard))
    })
}

/// An open trace. Closing it ([`finish`](Self::finish)) gives the graph; dropping it unclosed
/// (a closure panicked) just discards it.
pub(crate) struct TraceGuard {
    id: u32,
}

impl TraceGuard {
    /// Opens a new innermost trace on this thread.
    pub(crate) fn begin() -> Self {
        let id = NEXT_TRACE.fetch_add(1, Ordering::Relaxed);
        TRACES.with(|traces| {
            if let Ok(mut traces) = traces.try_borrow_mut() {
                traces.push(Trace {
                    id,
                    graph: Graph::default(),
                    dedup: HashMap::new(),
                    error: None,
                    guard: None,
                });
            }
        });
        Self { id }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Trace) -> R) -> Option<R> {
        TRACES.with(|traces| {
            let mut traces = traces.try_borrow_mut().ok()?;
            let trace = traces.iter_mut().rev().find(|t| t.id == self.id)?;
            Some(f(trace))
        })
    }

    /// The node of `r` in this trace (a constant is placed in it), or `None` after recording
    /// why not.
    pub(crate) fn resolve(&self, r: Ref) -> Option<NodeId> {
        self.with(|t| t.resolve(r)).flatten()
    }

    /// Adds `node` directly (for the leaves the chain itself creates: inputs, index, args).
    pub(crate) fn leaf(&self, node: Node, ty: ScalarType) -> Ref {
        self.with(|t| Ref::Node {
            trace: t.id,
            id: t.intern(node, ty),
        })
        .unwrap_or(Ref::Invalid)
    }

    /// Sets the filter condition for what is traced from now on.
    pub(crate) fn set_guard(&self, guard: Option<NodeId>) {
        self.with(|t| t.guard = guard);
    }

    /// Closes the trace: its graph, or the first error met while tracing.
    pub(crate) fn finish(self) -> Result<Graph, String> {
        let trace = TRACES.with(|traces| {
            let mut traces = traces.try_borrow_mut().ok()?;
            let pos = traces.iter().rposition(|t| t.id == self.id)?;
            Some(traces.remove(pos))
        });
        std::mem::forget(self);
        match trace {
            None => Err("internal error: the trace was closed twice".to_owned()),
            Some(Trace { error: Some(e), .. }) => Err(e),
            Some(t) => Ok(t.graph),
        }
    }
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        let id = self.id;
        TRACES.with(|traces| {
            if let Ok(mut traces) = traces.try_borrow_mut()
                && let Some(pos) = traces.iter().rposition(|t| t.id == id)
            {
                traces.remove(pos);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_hash_consed_and_typed() {
        let g = TraceGuard::begin();
        let x = g.leaf(Node::Input(0), ScalarType::F32);
        let two = Ref::Const(Constant::f32(2.0));
        let a = record(ScalarType::F32, &[x, two], |o| {
            Node::Binary(BinaryOp::Mul, o[0], o[1])
        });
        let b = record(ScalarType::F32, &[x, two], |o| {
            Node::Binary(BinaryOp::Mul, o[0], o[1])
        });
        assert_eq!(a, b);
        let graph = g.finish().unwrap();
        assert_eq!(graph.nodes.len(), 3);
        assert_eq!(graph.nodes[1].0, Node::Uniform(Constant::f32(2.0)));
    }

    #[test]
    fn values_outside_a_trace_are_errors_of_the_trace_using_them() {
        let outside = record(ScalarType::F32, &[Ref::Const(Constant::f32(1.0))], |o| {
            Node::Unary(UnaryOp::Neg, o[0])
        });
        assert_eq!(outside, Ref::Invalid);
        let g = TraceGuard::begin();
        let x = g.leaf(Node::Input(0), ScalarType::F32);
        let y = record(ScalarType::F32, &[x, outside], |o| {
            Node::Binary(BinaryOp::Add, o[0], o[1])
        });
        assert_eq!(y, Ref::Invalid);
        let err = g.finish().unwrap_err();
        assert!(err.contains("outside a chain's closures"), "{err}");
    }

    #[test]
    fn values_of_another_trace_are_refused_and_traces_nest() {
        let outer = TraceGuard::begin();
        let x = outer.leaf(Node::Input(0), ScalarType::F32);
        let inner = TraceGuard::begin();
        let y = record(ScalarType::F32, &[x], |o| Node::Unary(UnaryOp::Neg, o[0]));
        assert_eq!(y, Ref::Invalid);
        assert!(inner.finish().unwrap_err().contains("another chain"));
        // The outer trace is still open and usable.
        let z = record(ScalarType::F32, &[x], |o| Node::Unary(UnaryOp::Neg, o[0]));
        assert!(matches!(z, Ref::Node { .. }));
        assert_eq!(outer.finish().unwrap().nodes.len(), 2);
    }

    #[test]
    fn a_dropped_trace_is_discarded() {
        {
            let _g = TraceGuard::begin();
        }
        let r = record(ScalarType::F32, &[Ref::Const(Constant::f32(1.0))], |o| {
            Node::Unary(UnaryOp::Neg, o[0])
        });
        assert_eq!(r, Ref::Invalid);
    }
}
