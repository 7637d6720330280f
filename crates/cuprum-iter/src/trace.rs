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
//! # Recording and replaying
//!
//! A recording trace keeps, besides its graph, the [`TraceLog`]: which node each operation
//! gave, in order (a hash-consing hit gives an old node). Running the same closures again
//! usually makes the same operations, so a later trace may *replay* a log
//! ([`TraceGuard::replay`]): each operation is compared with the log's next one (the same node
//! with the same operands; for a host value, the same type and the same sharing of one node
//! by equal values that hash-consing would have made) instead of being hash-consed, and only
//! the host values are kept. A replay that ran through the whole log made exactly the graph of
//! the log, with this run's host values ([`Finished::Replayed`]); at the first operation that
//! differs (a captured count that changed the chain's length, a captured `bool` that chose
//! another expression) the replay turns into a recording of what was made so far and goes
//! on recording, so a replay never changes what a trace gives, only what it costs: a
//! comparison per operation instead of a hash-table insertion.
//!
//! This module knows nothing about devices or IR statements; `codegen` lowers the graph.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
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
    /// The nodes this one reads (at most three, no allocation).
    pub(crate) fn operands(&self) -> impl Iterator<Item = NodeId> {
        let ids = match *self {
            Node::Input(_) | Node::Index | Node::Arg(_) | Node::Uniform(_) => [None; 3],
            Node::Unary(_, a) | Node::Cast(a, _) => [Some(a), None, None],
            Node::Binary(_, a, b) | Node::Compare(_, a, b) => [Some(a), Some(b), None],
            Node::IntDiv { a, b, guard, .. } => [Some(a), Some(b), guard],
            Node::MulAdd(a, b, c) | Node::Select(a, b, c) => [Some(a), Some(b), Some(c)],
        };
        ids.into_iter().flatten()
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

    /// The host value of every [`Node::Uniform`], in node order.
    pub(crate) fn uniforms(&self) -> Vec<Constant> {
        self.nodes
            .iter()
            .filter_map(|(n, _)| match n {
                Node::Uniform(c) => Some(*c),
                _ => None,
            })
            .collect()
    }

    /// This graph with its uniforms' host values replaced, in node order, by `values`.
    pub(crate) fn with_uniforms(&self, values: &[Constant]) -> Graph {
        let mut values = values.iter();
        Graph {
            nodes: self
                .nodes
                .iter()
                .map(|&(node, ty)| match node {
                    Node::Uniform(c) => (Node::Uniform(values.next().copied().unwrap_or(c)), ty),
                    other => (other, ty),
                })
                .collect(),
        }
    }
}

/// A recorded trace: its graph and, for every operation in the order the closures made them,
/// the node it gave (see the [module docs](self#recording-and-replaying)).
#[derive(Debug, Default)]
pub(crate) struct TraceLog {
    pub(crate) graph: Graph,
    events: Vec<NodeId>,
}

/// What a closed trace made.
pub(crate) enum Finished {
    /// A graph recorded (a new one, or one whose replay went another way).
    Recorded(TraceLog),
    /// Exactly the graph of `log`, with `uniforms` (this run's host values of its uniform
    /// nodes, in node order) instead of the log's.
    Replayed {
        log: Arc<TraceLog>,
        uniforms: Vec<Constant>,
    },
}

#[cfg(test)]
impl Finished {
    /// The graph the trace made.
    pub(crate) fn into_graph(self) -> Graph {
        match self {
            Finished::Recorded(log) => log.graph,
            Finished::Replayed { log, uniforms } => log.graph.with_uniforms(&uniforms),
        }
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
    /// The graph so far (empty while `replay` is on).
    recording: Recording,
    /// The log this trace is comparing itself with, until an operation differs.
    replay: Option<Replay>,
    /// The first error met while tracing.
    error: Option<String>,
    /// The filter condition in force (see [`Node::IntDiv`]).
    guard: Option<NodeId>,
}

#[derive(Default)]
struct Recording {
    log: TraceLog,
    dedup: HashMap<Node, NodeId>,
}

impl Recording {
    fn intern(&mut self, node: Node, ty: ScalarType) -> NodeId {
        let id = match self.dedup.get(&node) {
            Some(&id) => id,
            None => {
                let id = self.log.graph.nodes.len() as NodeId;
                self.log.graph.nodes.push((node, ty));
                self.dedup.insert(node, id);
                id
            }
        };
        self.log.events.push(id);
        id
    }
}

struct Replay {
    log: Arc<TraceLog>,
    /// Operations matched so far.
    cursor: usize,
    /// Nodes made so far: the log's first `created`.
    created: usize,
    /// This run's host values and their uniform nodes (what hash-consing would have merged).
    uniforms: HashMap<Constant, NodeId>,
    /// This run's value of each uniform node made so far, in node order.
    values: Vec<Constant>,
}

impl Replay {
    fn new(log: Arc<TraceLog>) -> Self {
        Self {
            log,
            cursor: 0,
            created: 0,
            uniforms: HashMap::new(),
            values: Vec::new(),
        }
    }

    /// The node the recording gave for `node` at this point, when the replayed run gives
    /// the same (else `None`, and nothing changed).
    fn step(&mut self, node: Node, ty: ScalarType) -> Option<NodeId> {
        let &id = self.log.events.get(self.cursor)?;
        let (logged, logged_ty) = self.log.graph.node(id)?;
        let fresh = id as usize == self.created;
        if logged_ty != ty || id as usize > self.created {
            return None;
        }
        match (node, logged) {
            // Equal host values share a node, distinct ones do not, as when recording.
            (Node::Uniform(c), Node::Uniform(_)) => match self.uniforms.get(&c) {
                Some(&u) if u == id => {}
                None if fresh => {
                    self.uniforms.insert(c, id);
                    self.values.push(c);
                }
                _ => return None,
            },
            // Other nodes hold no host values: equal operands, equal node.
            _ if node == logged => {}
            _ => return None,
        }
        self.created += usize::from(fresh);
        self.cursor += 1;
        Some(id)
    }

    /// What a recording of the same operations would hold at this point.
    fn into_recording(self) -> Recording {
        let graph = Graph {
            nodes: self.log.graph.nodes[..self.created].to_vec(),
        }
        .with_uniforms(&self.values);
        let dedup = graph
            .nodes
            .iter()
            .enumerate()
            .map(|(id, &(node, _))| (node, id as NodeId))
            .collect();
        Recording {
            log: TraceLog {
                graph,
                events: self.log.events[..self.cursor].to_vec(),
            },
            dedup,
        }
    }

    /// Whether the run made every operation of the log.
    fn complete(&self) -> bool {
        self.cursor == self.log.events.len()
    }
}

impl Trace {
    fn intern(&mut self, node: Node, ty: ScalarType) -> NodeId {
        if let Some(replay) = &mut self.replay
            && let Some(id) = replay.step(node, ty)
        {
            return id;
        }
        if let Some(replay) = self.replay.take() {
            self.recording = replay.into_recording();
        }
        self.recording.intern(node, ty)
    }

    fn finish(self) -> Result<Finished, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(match self.replay {
            Some(replay) if replay.complete() => Finished::Replayed {
                log: replay.log,
                uniforms: replay.values,
            },
            Some(replay) => Finished::Recorded(replay.into_recording().log),
            None => Finished::Recorded(self.recording.log),
        })
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
        let mut ids: [NodeId; 3] = [0; 3];
        if operands.len() > ids.len() {
            trace.fail("internal error: an operation with more than three operands".to_owned());
            return Ref::Invalid;
        }
        for (slot, &r) in ids.iter_mut().zip(operands) {
            match trace.resolve(r) {
                Some(id) => *slot = id,
                None => return Ref::Invalid,
            }
        }
        let ids = &ids[..operands.len()];
        let node = make(ids);
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

/// An open trace. Closing it ([`finish_traced`](Self::finish_traced)) gives what it made;
/// dropping it unclosed (a closure panicked) just discards it.
pub(crate) struct TraceGuard {
    id: u32,
}

impl TraceGuard {
    /// Opens a new innermost trace on this thread, recording.
    pub(crate) fn begin() -> Self {
        Self::open(None)
    }

    /// Opens a new innermost trace on this thread that replays `log` while the closures
    /// make the same operations (see the [module docs](self#recording-and-replaying)).
    pub(crate) fn replay(log: Arc<TraceLog>) -> Self {
        Self::open(Some(Replay::new(log)))
    }

    fn open(replay: Option<Replay>) -> Self {
        let id = NEXT_TRACE.fetch_add(1, Ordering::Relaxed);
        TRACES.with(|traces| {
            if let Ok(mut traces) = traces.try_borrow_mut() {
                traces.push(Trace {
                    id,
                    recording: Recording::default(),
                    replay,
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

    /// Closes the trace: what it made, or the first error met while tracing.
    pub(crate) fn finish_traced(self) -> Result<Finished, String> {
        let trace = TRACES.with(|traces| {
            let mut traces = traces.try_borrow_mut().ok()?;
            let pos = traces.iter().rposition(|t| t.id == self.id)?;
            Some(traces.remove(pos))
        });
        std::mem::forget(self);
        match trace {
            None => Err("internal error: the trace was closed twice".to_owned()),
            Some(t) => t.finish(),
        }
    }

    /// Closes the trace: its graph, or the first error met while tracing.
    #[cfg(test)]
    pub(crate) fn finish(self) -> Result<Graph, String> {
        self.finish_traced().map(Finished::into_graph)
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

    /// One operation of a random closure: operands are indices of earlier values (0 and 1
    /// are inputs), host values come from a small set so that some coincide.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Step {
        Add(usize, usize),
        MulBy(usize, f32),
        Neg(usize),
        Select(usize, usize, usize),
    }

    /// Runs `steps` in the innermost trace; the value of the last step.
    fn run(steps: &[Step], inputs: [Ref; 2]) -> Ref {
        let mut vals = inputs.to_vec();
        let at = |vals: &Vec<Ref>, i: usize| vals[i % vals.len()];
        for &s in steps {
            let v = match s {
                Step::Add(a, b) => record(ScalarType::F32, &[at(&vals, a), at(&vals, b)], |o| {
                    Node::Binary(BinaryOp::Add, o[0], o[1])
                }),
                Step::MulBy(a, c) => record(
                    ScalarType::F32,
                    &[at(&vals, a), Ref::Const(Constant::f32(c))],
                    |o| Node::Binary(BinaryOp::Mul, o[0], o[1]),
                ),
                Step::Neg(a) => record(ScalarType::F32, &[at(&vals, a)], |o| {
                    Node::Unary(UnaryOp::Neg, o[0])
                }),
                Step::Select(c, a, b) => {
                    let cond = record(ScalarType::Bool, &[at(&vals, c), at(&vals, a)], |o| {
                        Node::Compare(cuprum_ir::CmpOp::Lt, o[0], o[1])
                    });
                    record(ScalarType::F32, &[cond, at(&vals, a), at(&vals, b)], |o| {
                        Node::Select(o[0], o[1], o[2])
                    })
                }
            };
            vals.push(v);
        }
        vals[vals.len() - 1]
    }

    /// Traces `steps`, replaying `log` if given: what the trace made and its result.
    fn trace(steps: &[Step], log: Option<Arc<TraceLog>>) -> (Finished, Ref) {
        let g = match log {
            Some(log) => TraceGuard::replay(log),
            None => TraceGuard::begin(),
        };
        let inputs = [
            g.leaf(Node::Input(0), ScalarType::F32),
            g.leaf(Node::Input(1), ScalarType::F32),
        ];
        let out = run(steps, inputs);
        (g.finish_traced().unwrap(), out)
    }

    fn recorded(f: Finished) -> TraceLog {
        match f {
            Finished::Recorded(log) => log,
            Finished::Replayed { .. } => panic!("a fresh trace replayed"),
        }
    }

    fn random_steps(rng: &mut impl rand::Rng, len: usize) -> Vec<Step> {
        let consts = [1.0f32, 2.0, 3.0];
        (0..len)
            .map(|_| {
                let [a, b, c] = [(); 3].map(|()| rng.random_range(0..64usize));
                match rng.random_range(0..4) {
                    0 => Step::Add(a, b),
                    1 => Step::MulBy(a, consts[b % consts.len()]),
                    2 => Step::Neg(a),
                    _ => Step::Select(a, b, c),
                }
            })
            .collect()
    }

    /// A change to one step (or the length) of `steps`.
    fn mutate(rng: &mut impl rand::Rng, steps: &[Step]) -> Vec<Step> {
        let mut s = steps.to_vec();
        let pos = rng.random_range(0..s.len().max(1));
        match rng.random_range(0..6) {
            0 => s.truncate(pos),
            1 => s.extend(random_steps(rng, 3)),
            2 => {
                // Only a host value: often still the same graph (new values), sometimes
                // one that coincides with another and is merged.
                for st in s.iter_mut().skip(pos) {
                    if let Step::MulBy(_, c) = st {
                        *c = [1.0f32, 2.0, 3.0, 5.0][rng.random_range(0..4)];
                        break;
                    }
                }
            }
            3 => s.clear(),
            4 => {}
            _ => {
                if let Some(st) = s.get_mut(pos) {
                    *st = random_steps(rng, 1)[0];
                }
            }
        }
        s
    }

    #[test]
    fn a_replay_gives_what_a_recording_of_the_same_run_gives() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = rand::random();
        eprintln!("seed {seed}");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (mut replayed, mut diverged) = (0, 0);
        for case in 0..400 {
            let len = rng.random_range(0..40);
            let first = random_steps(&mut rng, len);
            let log = Arc::new(recorded(trace(&first, None).0));
            let second = mutate(&mut rng, &first);
            let (fresh, fresh_out) = trace(&second, None);
            let fresh = recorded(fresh);
            let (again, again_out) = trace(&second, Some(log.clone()));
            let id = |r: Ref| match r {
                Ref::Node { id, .. } => Some(id),
                _ => None,
            };
            assert_eq!(
                id(again_out),
                id(fresh_out),
                "case {case}: the run's result"
            );
            match again {
                Finished::Replayed { log: l, uniforms } => {
                    replayed += 1;
                    assert!(Arc::ptr_eq(&l, &log));
                    // The same nodes, events and (this run's) host values as recording.
                    assert_eq!(l.graph.with_uniforms(&uniforms), fresh.graph, "case {case}");
                    assert_eq!(l.events, fresh.events, "case {case}");
                    assert_eq!(uniforms, fresh.graph.uniforms(), "case {case}");
                }
                Finished::Recorded(l) => {
                    diverged += 1;
                    assert_eq!(
                        l.graph, fresh.graph,
                        "case {case}: {first:?} then {second:?}"
                    );
                    assert_eq!(l.events, fresh.events, "case {case}");
                    // A replay that diverged really met another graph (or a host value
                    // that coincides with another where it did not before, or vice versa).
                    let same_shape = l.events == log.events
                        && l.graph.nodes.len() == log.graph.nodes.len()
                        && l.graph.nodes.iter().zip(&log.graph.nodes).all(|(a, b)| {
                            matches!((a.0, b.0), (Node::Uniform(_), Node::Uniform(_))) || a == b
                        });
                    assert!(!same_shape, "case {case}: the same graph did not replay");
                }
            }
        }
        assert!(
            replayed > 50 && diverged > 50,
            "{replayed} replays, {diverged} divergences"
        );
    }

    #[test]
    fn merged_and_split_host_values_are_not_replayed() {
        // `x * 2 * 3` and `x * 2 * 2`: the second shares one uniform node.
        let a = [Step::MulBy(0, 2.0), Step::MulBy(2, 3.0)];
        let b = [Step::MulBy(0, 2.0), Step::MulBy(2, 2.0)];
        let c = [Step::MulBy(0, 5.0), Step::MulBy(2, 7.0)];
        let log_a = Arc::new(recorded(trace(&a, None).0));
        let log_b = Arc::new(recorded(trace(&b, None).0));
        assert!(matches!(
            trace(&b, Some(log_a.clone())).0,
            Finished::Recorded(_)
        ));
        assert!(matches!(trace(&a, Some(log_b)).0, Finished::Recorded(_)));
        match trace(&c, Some(log_a)).0 {
            Finished::Replayed { uniforms, .. } => {
                assert_eq!(uniforms, vec![Constant::f32(5.0), Constant::f32(7.0)]);
            }
            Finished::Recorded(_) => panic!("new host values, same graph: not replayed"),
        }
    }
}
