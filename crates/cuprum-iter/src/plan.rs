//! Reusing a terminal call's work: a repeated call of the same chain replays its traces and
//! launches the kernels it launched last time, without recording a graph, computing a kernel
//! key or generating anything.
//!
//! A [`Call`] is one terminal call. It traces the chain and the combining functions it needs
//! (each one a trace of its own), and gives the terminal its kernels one by one
//! ([`Call::kernel`]). The device keeps, per [`PlanKey`], the [`Plan`] of the last call: its
//! trace logs, the facts its kernels depend on besides the graphs ([`Shape`]), which of its
//! host values were equal, and its kernels.
//!
//! The key is the chain's type (which names every source element type, every adapter and
//! every closure: Rust gives each closure a type of its own), the terminal and its combining
//! function's type. It only says which plan to try: a call uses its plan's kernels only when
//! * each trace replayed its log to the end (see `trace.rs`): the same graph, node for node,
//!   with this call's host values, however the closures made it (a captured count or
//!   `bool` that changes the chain makes another graph, and the replay sees it);
//! * the roots, filter condition, input types and tunings ([`Shape`]) are the same;
//! * the same host values are equal to each other (equal values share one kernel parameter,
//!   so the pattern of equalities is part of each kernel's structure).
//!
//! Then every kernel's key (see `exec::KernelKey`) is the plan's, so its kernel is too, and
//! only its parameters, taken from this call's host values, differ. Any other call goes the
//! long way (kernel keys, generation where a key is new) and leaves its own plan for the next.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use cuprum_ir::{BinaryOp, Constant, ScalarType};
use cuprum_runtime::{KernelArg, LoadedModule};

use crate::codegen::Accum;
use crate::codegen::kernels::ChainIr;
use crate::device::{GpuDevice, Tuning, compile_error};
use crate::expr::{Element, Expr};
use crate::iter::{EmitCx, GpuIter};
use crate::trace::{Finished, Graph, Node, NodeId, Ref, TraceGuard, TraceLog};
use crate::{GpuError, GpuResult};

/// What a terminal call is, for finding its [`Plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PlanKey {
    /// The chain's type, lifetimes erased.
    chain: TypeId,
    terminal: Terminal,
    /// The type of the combining function the terminal traces, if any.
    op: Option<TypeId>,
}

impl PlanKey {
    /// The key of terminal `terminal` on a chain of type `I`.
    pub(crate) fn of<I: ?Sized>(terminal: Terminal) -> Self {
        Self {
            chain: typeid::of::<I>(),
            terminal,
            op: None,
        }
    }

    /// The same, for a terminal that traces a combining function of type `F`.
    pub(crate) fn with_op<I: ?Sized, F: ?Sized>(terminal: Terminal) -> Self {
        Self {
            op: Some(typeid::of::<F>()),
            ..Self::of::<I>(terminal)
        }
    }
}

/// The terminal operations, as far as their kernels differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Terminal {
    Materialize,
    /// `sum`, `reduce`: the value.
    Reduce,
    /// `min`, `max`: the value, or none when a filter kept nothing.
    ReduceOrNone,
    SumOnDevice,
    Count,
}

/// What a call's kernels depend on besides its graphs and host values.
#[derive(Clone, Debug, PartialEq)]
struct Shape {
    /// The kernel settings of maps, filters and reductions when the call began.
    tunings: [Tuning; 3],
    /// Element type of each input slot.
    inputs: Vec<ScalarType>,
    /// The chain's values the terminal asked for, and its filter condition.
    roots: Vec<NodeId>,
    mask: Option<NodeId>,
    /// Each accumulator's type and result node.
    accums: Vec<(ScalarType, NodeId)>,
}

/// The last call of a [`PlanKey`], for the next one to reuse.
pub(crate) struct Plan {
    /// One log per trace, in the order the call traced.
    traces: Vec<Arc<TraceLog>>,
    shape: Shape,
    /// For each host value of the call (see [`Call::values`]), the index of the first value
    /// equal to it.
    pattern: Vec<u32>,
    /// The kernels by the order the terminal asks for them (`None`: never asked yet).
    kernels: Vec<Option<PlannedKernel>>,
}

#[derive(Clone)]
struct PlannedKernel {
    module: Arc<LoadedModule>,
    per_thread: u32,
    /// For each uniform parameter, in order, the index of a host value of the call with its
    /// value.
    params: Vec<u32>,
}

/// A loaded kernel and the host values its trailing parameters take in this call.
pub(crate) struct Ready {
    pub(crate) module: Arc<LoadedModule>,
    pub(crate) per_thread: u32,
    pub(crate) uniforms: Vec<Constant>,
}

impl Ready {
    pub(crate) fn uniform_args(&self) -> impl Iterator<Item = KernelArg> + '_ {
        self.uniforms.iter().map(|c| KernelArg::Scalar {
            ty: c.ty,
            bits: c.bits,
        })
    }
}

/// What a call traced, as the kernel generators want it (built only when a kernel is not
/// reused).
pub(crate) struct Traced {
    pub(crate) chain: ChainIr,
    /// The values the terminal asked for.
    pub(crate) roots: Vec<NodeId>,
    /// The accumulators, in the order the terminal added them.
    pub(crate) accums: Vec<Accum>,
}

impl Traced {
    /// Root `i` of the chain.
    pub(crate) fn root(&self, i: usize) -> GpuResult<NodeId> {
        self.roots
            .get(i)
            .copied()
            .ok_or_else(|| chain_error("internal error: a root of the chain was not traced"))
    }
}

/// What the launches of a call need from its chain, reused or not.
pub(crate) struct ChainRun {
    /// The slice argument of each input slot.
    pub(crate) inputs: Vec<KernelArg>,
    /// Elements before any filter.
    pub(crate) len: usize,
    /// Whether the chain filters.
    pub(crate) filtered: bool,
    /// Whether the terminal asked for any value (`count` without a filter does not).
    pub(crate) has_roots: bool,
}

pub(crate) fn chain_error(message: impl Into<String>) -> GpuError {
    compile_error("iterator chain", message)
}

/// Where an accumulator's combining function comes from.
enum Combine {
    /// Trace number `i` of the call.
    Traced(usize),
    /// A graph the crate made (the survivor count).
    Fixed(Graph),
}

struct AccumSpec {
    ty: ScalarType,
    identity: Constant,
    combine: Combine,
    root: NodeId,
}

/// A trace of the call: the log it recorded or replayed, and this call's host values.
struct CallTrace {
    log: Arc<TraceLog>,
    /// `None`: recorded, so the log holds this call's values.
    replayed: Option<Vec<Constant>>,
}

impl CallTrace {
    fn from_finished(f: Finished) -> Self {
        match f {
            Finished::Recorded(log) => Self {
                log: Arc::new(log),
                replayed: None,
            },
            Finished::Replayed { log, uniforms } => Self {
                log,
                replayed: Some(uniforms),
            },
        }
    }

    fn uniforms(&self) -> Vec<Constant> {
        match &self.replayed {
            Some(u) => u.clone(),
            None => self.log.graph.uniforms(),
        }
    }

    fn graph(&self) -> Graph {
        match &self.replayed {
            Some(u) => self.log.graph.with_uniforms(u),
            None => self.log.graph.clone(),
        }
    }
}

/// For each value, the index of the first one equal to it.
fn equality_pattern(values: &[Constant]) -> Vec<u32> {
    let mut first: HashMap<Constant, u32> = HashMap::with_capacity(values.len());
    values
        .iter()
        .enumerate()
        .map(|(i, c)| *first.entry(*c).or_insert(i as u32))
        .collect()
}

/// One terminal call (see the [module docs](self)).
pub(crate) struct Call<'d> {
    device: &'d GpuDevice,
    key: PlanKey,
    /// The device's plan for the key, whose logs the traces replay.
    candidate: Option<Arc<Plan>>,
    traces: Vec<CallTrace>,
    accums: Vec<AccumSpec>,
    shape: Shape,
    /// Every host value of the call: each trace's uniforms in node order, each
    /// accumulator's identity after its combining function's.
    values: Vec<Constant>,
    /// Set by [`settle`](Self::settle): the plan this call follows, and whether its kernels
    /// are this call's.
    settled: Option<(Arc<Plan>, bool)>,
    /// Built the first time a kernel is not reused.
    traced: Option<Traced>,
}

impl<'d> Call<'d> {
    pub(crate) fn new(device: &'d GpuDevice, key: PlanKey) -> Self {
        let start = Instant::now();
        let candidate = device.find_plan(&key);
        device.note(|s| s.lookup_time += start.elapsed());
        Self {
            device,
            key,
            candidate,
            traces: Vec::new(),
            accums: Vec::new(),
            shape: Shape {
                tunings: [
                    device.map_tuning(),
                    device.tuning(),
                    device.reduction_tuning(),
                ],
                inputs: Vec::new(),
                roots: Vec::new(),
                mask: None,
                accums: Vec::new(),
            },
            values: Vec::new(),
            settled: None,
            traced: None,
        }
    }

    /// The tuning of element-wise kernels for this call.
    pub(crate) fn map_tuning(&self) -> Tuning {
        self.shape.tunings[0]
    }

    /// The tuning of `filter` kernels for this call.
    pub(crate) fn filter_tuning(&self) -> Tuning {
        self.shape.tunings[1]
    }

    /// The tuning of reductions for this call.
    pub(crate) fn reduction_tuning(&self) -> Tuning {
        self.shape.tunings[2]
    }

    /// A trace for the call's next log: replaying the plan's, or recording.
    fn open_trace(&self) -> TraceGuard {
        match self
            .candidate
            .as_ref()
            .and_then(|p| p.traces.get(self.traces.len()))
        {
            Some(log) => TraceGuard::replay(log.clone()),
            None => TraceGuard::begin(),
        }
    }

    fn close_trace(&mut self, trace: TraceGuard, start: Instant) -> GpuResult<()> {
        let finished = trace.finish_traced();
        let replayed = matches!(finished, Ok(Finished::Replayed { .. }));
        self.device.note(|s| {
            if replayed {
                s.replays += 1;
            } else {
                s.traces += 1;
            }
            s.trace_time += start.elapsed();
        });
        let t = CallTrace::from_finished(finished.map_err(chain_error)?);
        self.values.extend(t.uniforms());
        self.traces.push(t);
        Ok(())
    }

    /// Traces `iter` (the call's first trace); `roots` picks, while the trace is still open,
    /// the values the terminal needs from the chain's item and filter condition.
    pub(crate) fn chain<I: GpuIter>(
        &mut self,
        iter: &I,
        roots: impl FnOnce(I::Item, Option<Expr<bool>>) -> Vec<Ref>,
    ) -> GpuResult<ChainRun> {
        let start = Instant::now();
        let mut cx = EmitCx::new(self.device.clone(), self.open_trace());
        let item = iter.emit(&mut cx)?;
        let EmitCx {
            trace,
            inputs,
            mask,
            ..
        } = cx;
        let wanted = roots(item, mask);
        let ids: Vec<Option<NodeId>> = wanted.into_iter().map(|r| trace.resolve(r)).collect();
        let mask = mask.map(|m| trace.resolve(m.r));
        self.close_trace(trace, start)?;
        let missing = || chain_error("internal error: a root of the chain was not traced");
        self.shape.roots = ids
            .into_iter()
            .map(|id| id.ok_or_else(missing))
            .collect::<GpuResult<Vec<_>>>()?;
        self.shape.mask = mask.map(|m| m.ok_or_else(missing)).transpose()?;
        self.shape.inputs = inputs.iter().map(|&(_, ty)| ty).collect();
        Ok(ChainRun {
            inputs: inputs.into_iter().map(|(arg, _)| arg).collect(),
            len: iter.dense_len(),
            filtered: self.shape.mask.is_some(),
            has_roots: !self.shape.roots.is_empty(),
        })
    }

    /// Adds an accumulator whose combining function is `op` (traced on its own) and whose
    /// identity is `identity`.
    pub(crate) fn accum<T: Element>(
        &mut self,
        identity: T,
        op: impl Fn(Expr<T>, Expr<T>) -> Expr<T>,
    ) -> GpuResult<()> {
        let start = Instant::now();
        let trace = self.open_trace();
        let a = Expr::<T>::from_ref(trace.leaf(Node::Arg(0), T::TYPE));
        let b = Expr::<T>::from_ref(trace.leaf(Node::Arg(1), T::TYPE));
        let root = trace.resolve(op(a, b).r);
        let index = self.traces.len();
        self.close_trace(trace, start)?;
        let root = root.ok_or_else(|| chain_error("internal error: no combined value"))?;
        self.push_accum(AccumSpec {
            ty: T::TYPE,
            identity: Constant::new(T::TYPE, identity.to_bits()),
            combine: Combine::Traced(index),
            root,
        });
        Ok(())
    }

    /// Adds a `u64` sum from 0 (the survivor count of a filter).
    pub(crate) fn count_accum(&mut self) {
        let ty = ScalarType::U64;
        self.push_accum(AccumSpec {
            ty,
            identity: Constant::u64(0),
            combine: Combine::Fixed(Graph {
                nodes: vec![
                    (Node::Arg(0), ty),
                    (Node::Arg(1), ty),
                    (Node::Binary(BinaryOp::Add, 0, 1), ty),
                ],
            }),
            root: 2,
        });
    }

    fn push_accum(&mut self, spec: AccumSpec) {
        self.values.push(spec.identity);
        self.shape.accums.push((spec.ty, spec.root));
        self.accums.push(spec);
    }

    /// Decides whether this call follows its candidate plan (see the [module docs](self));
    /// otherwise leaves a new plan with the call's logs on the device. Call it once every
    /// trace and accumulator is in; [`kernel`](Self::kernel) does it if the terminal did not.
    pub(crate) fn settle(&mut self) -> Arc<Plan> {
        if let Some((plan, _)) = &self.settled {
            return plan.clone();
        }
        let start = Instant::now();
        let pattern = equality_pattern(&self.values);
        let follows = self.candidate.take().filter(|plan| {
            plan.traces.len() == self.traces.len()
                && self.traces.iter().all(|t| t.replayed.is_some())
                && plan.shape == self.shape
                && plan.pattern == pattern
        });
        let (plan, follows) = match follows {
            Some(plan) => (plan, true),
            None => {
                let plan = Arc::new(Plan {
                    traces: self.traces.iter().map(|t| t.log.clone()).collect(),
                    shape: self.shape.clone(),
                    pattern,
                    kernels: Vec::new(),
                });
                self.device.remember_plan(self.key, plan.clone());
                (plan, false)
            }
        };
        self.device.note(|s| s.lookup_time += start.elapsed());
        self.settled = Some((plan.clone(), follows));
        plan
    }

    /// Kernel number `i` of the terminal: the plan's, with this call's parameters, when the
    /// call follows the plan and the plan has it; else `build`'s (given the traced graphs),
    /// which then joins the plan.
    pub(crate) fn kernel(
        &mut self,
        i: usize,
        build: impl FnOnce(&Traced) -> GpuResult<Ready>,
    ) -> GpuResult<Ready> {
        let plan = self.settle();
        let follows = matches!(self.settled, Some((_, true)));
        if follows && let Some(Some(k)) = plan.kernels.get(i) {
            let uniforms = k
                .params
                .iter()
                .map(|&p| self.values.get(p as usize).copied())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| chain_error("internal error: a parameter of no host value"))?;
            self.device.note(|s| s.kernels_reused += 1);
            return Ok(Ready {
                module: k.module.clone(),
                per_thread: k.per_thread,
                uniforms,
            });
        }
        if self.traced.is_none() {
            self.traced = Some(self.traced_graphs());
        }
        let traced = self
            .traced
            .as_ref()
            .ok_or_else(|| chain_error("internal error: no graphs"))?;
        let ready = build(traced)?;
        // Where each parameter's value sits among the call's host values.
        let mut first: HashMap<Constant, u32> = HashMap::with_capacity(self.values.len());
        for (p, c) in self.values.iter().enumerate() {
            first.entry(*c).or_insert(p as u32);
        }
        let params = ready
            .uniforms
            .iter()
            .map(|c| first.get(c).copied())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| chain_error("internal error: a kernel parameter of no host value"))?;
        let mut kernels = plan.kernels.clone();
        if kernels.len() <= i {
            kernels.resize(i + 1, None);
        }
        kernels[i] = Some(PlannedKernel {
            module: ready.module.clone(),
            per_thread: ready.per_thread,
            params,
        });
        let grown = Arc::new(Plan {
            traces: plan.traces.clone(),
            shape: plan.shape.clone(),
            pattern: plan.pattern.clone(),
            kernels,
        });
        self.device.remember_plan(self.key, grown.clone());
        self.settled = Some((grown, follows));
        Ok(ready)
    }

    fn traced_graphs(&self) -> Traced {
        let graph_of = |i: usize| self.traces.get(i).map(CallTrace::graph).unwrap_or_default();
        Traced {
            chain: ChainIr {
                graph: graph_of(0),
                inputs: self.shape.inputs.clone(),
                mask: self.shape.mask,
            },
            roots: self.shape.roots.clone(),
            accums: self
                .accums
                .iter()
                .map(|a| Accum {
                    ty: a.ty,
                    identity: a.identity,
                    combine: match &a.combine {
                        Combine::Traced(i) => graph_of(*i),
                        Combine::Fixed(g) => g.clone(),
                    },
                    root: a.root,
                })
                .collect(),
        }
    }
}
