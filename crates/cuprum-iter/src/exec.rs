//! Running a chain: trace it (see `plan.rs` for how a repeated call replays its traces and
//! reuses its kernels), generate (or find in the caches) its kernels, size the grid to the
//! device, launch.
//!
//! What each terminal costs on the device (`n` elements; launches and allocations are what
//! `ctx.stats()` counts, and the tests check them):
//!
//! | terminal | launches | allocations | memory traffic |
//! |---|---|---|---|
//! | `materialize`/`collect`, no filter | 1 | 1 (the output) | inputs read once, output written once |
//! | `sum`/`min`/`max`/`reduce`/`count` | 2 | 2 (partials, result; 3 for `min`/`max` after a `filter`, which also count the survivors) | inputs read once; the second launch reads one partial per block |
//! | `materialize`/`collect` with a filter | 2 | 2 (block counts, output) | inputs the filter reads twice, the rest once; survivors written once |
//! | `count` without a filter | 0 | 0 | none |
//!
//! Empty inputs launch nothing and give an empty output or the identity.

use std::collections::HashMap;
use std::time::Instant;

use cuprum_ir::{Constant, Module, ScalarType};
use cuprum_runtime::{DeviceBuffer, Error, KernelArg, LaunchConfig, LaunchConfig1D};

use crate::GpuResult;
use crate::codegen::kernels::{
    Built, ChainIr, final_kernel, map_kernel, reduce_kernel, scatter_kernel,
};
use crate::codegen::uniform_order;
use crate::device::{GpuDevice, GpuVec, Tuning, compile_error};
use crate::expr::{Element, Expr, Numeric};
use crate::iter::GpuIter;
use crate::plan::{Call, ChainRun, PlanKey, Ready, Terminal, chain_error};
use crate::trace::{Graph, Node, NodeId};

fn compiled<T>(r: Result<T, String>, kernel: &str) -> GpuResult<T> {
    r.map_err(|m| compile_error(kernel, m))
}

/// Which generator makes a kernel, with the settings only it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Map,
    Reduce { chunked: bool },
    Final,
    Scatter { per_thread: u32 },
}

/// Everything a generated kernel depends on, with each host value replaced by its parameter
/// slot: the traced graphs and the generator's inputs. Generation is deterministic, so equal
/// keys mean equal IR, and a key hit skips generating and printing the IR (tens of
/// microseconds per call otherwise); behind it, kernels are still deduplicated by their IR.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct KernelKey {
    kind: Kind,
    graphs: Vec<Vec<(Node, ScalarType)>>,
    /// Type and parameter slot of each extra host value (the identities).
    extra: Vec<(ScalarType, usize)>,
    inputs: Vec<ScalarType>,
    roots: Vec<NodeId>,
    mask: Option<NodeId>,
    types: Vec<ScalarType>,
    tuning: Tuning,
}

/// What a kernel is generated from (see [`KernelKey`]).
struct Spec<'a> {
    kind: Kind,
    graphs: Vec<&'a Graph>,
    extra: Vec<Constant>,
    inputs: &'a [ScalarType],
    roots: Vec<NodeId>,
    mask: Option<NodeId>,
    types: Vec<ScalarType>,
    tuning: Tuning,
}

/// The kernel `spec` describes: from the device's caches, or made by `build` and loaded.
fn ready(
    device: &GpuDevice,
    spec: Spec,
    name: &str,
    build: impl FnOnce() -> Result<Built, String>,
) -> GpuResult<Ready> {
    let start = Instant::now();
    let uniforms = uniform_order(&spec.graphs, &spec.extra);
    let slots: HashMap<Constant, usize> =
        uniforms.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    let slot = |c: &Constant| slots.get(c).copied().unwrap_or(usize::MAX);
    let key = KernelKey {
        kind: spec.kind,
        graphs: spec
            .graphs
            .iter()
            .map(|g| {
                g.nodes
                    .iter()
                    .map(|&(node, ty)| match node {
                        Node::Uniform(c) => (Node::Uniform(Constant::u64(slot(&c) as u64)), ty),
                        other => (other, ty),
                    })
                    .collect()
            })
            .collect(),
        extra: spec.extra.iter().map(|c| (c.ty, slot(c))).collect(),
        inputs: spec.inputs.to_vec(),
        roots: spec.roots,
        mask: spec.mask,
        types: spec.types,
        tuning: spec.tuning,
    };
    let found = device.find_kernel(&key);
    device.note(|s| s.lookup_time += start.elapsed());
    if let Some((module, per_thread)) = found {
        return Ok(Ready {
            module,
            per_thread,
            uniforms,
        });
    }
    let start = Instant::now();
    let built = build();
    device.note(|s| {
        s.kernels_generated += 1;
        s.generate_time += start.elapsed();
    });
    let built = compiled(built, name)?;
    if built.uniforms != uniforms {
        return Err(compile_error(
            name,
            "internal error: the kernel's parameters are not in the traced order",
        ));
    }
    let start = Instant::now();
    let module = device.load(Module {
        kernels: vec![built.kernel],
    });
    device.note(|s| s.load_time += start.elapsed());
    let module = module?;
    device.remember_kernel(key, module.clone(), built.per_thread);
    Ok(Ready {
        module,
        per_thread: built.per_thread,
        uniforms,
    })
}

/// Launches `kernel` with `grid` blocks.
fn launch(
    device: &GpuDevice,
    kernel: &Ready,
    block: u32,
    grid: u32,
    args: &[KernelArg],
) -> GpuResult<()> {
    let config: LaunchConfig = LaunchConfig1D::new(grid, block, 0).into();
    // SAFETY: every slice argument is a live buffer of the device's context (the chain holds
    // its sources; outputs are owned here) whose element type is the parameter's, since both
    // were derived from the same `Element` types; outputs are fresh allocations that alias
    // nothing; the generated kernels index only below the lengths they are given (the
    // emulator's bounds checks prove it in the tests).
    unsafe { device.launch(&kernel.module, config, args) }
}

/// Blocks for a grid-stride loop over `units` units of work: enough to fill the device
/// (`multiprocessor_count * blocks_per_sm`), fewer for small inputs, at least one.
fn grid_for(device: &GpuDevice, t: &Tuning, units: usize) -> u32 {
    let sms = device.context().limits().multiprocessor_count.max(1);
    let full = u64::from(sms) * u64::from(t.blocks_per_sm);
    let need = (units.div_ceil(t.block as usize).max(1)) as u64;
    full.min(need).min(u64::from(u32::MAX)) as u32
}

fn check_device<I: GpuIter>(iter: &I, device: &GpuDevice) -> GpuResult<()> {
    if iter.source_device().same(device) {
        Ok(())
    } else {
        Err(Error::ContextMismatch)
    }
}

pub(crate) fn materialize<T: Element, I: GpuIter<Item = Expr<T>>>(
    iter: &I,
    device: &GpuDevice,
) -> GpuResult<GpuVec<T>> {
    check_device(iter, device)?;
    let mut call = Call::new(device, PlanKey::of::<I>(Terminal::Materialize));
    let run = call.chain(iter, |item, _| vec![item.r])?;
    if run.filtered {
        call.count_accum();
        return compact(&mut call, &run, device);
    }
    call.settle();
    let t = call.map_tuning();
    let mut out = device.output::<T>(run.len)?;
    if run.len > 0 {
        let kernel = call.kernel(0, |tr| {
            let value = tr.root(0)?;
            let spec = Spec {
                kind: Kind::Map,
                graphs: vec![&tr.chain.graph],
                extra: Vec::new(),
                inputs: &tr.chain.inputs,
                roots: vec![value],
                mask: None,
                types: vec![T::TYPE],
                tuning: t,
            };
            ready(device, spec, "iter_map", || {
                map_kernel(&tr.chain, value, T::TYPE, &t)
            })
        })?;
        let grid = grid_for(device, &t, run.len.div_ceil(kernel.per_thread as usize));
        let mut args = run.inputs.clone();
        args.push(KernelArg::slice_mut(&mut out));
        args.push(KernelArg::scalar(run.len as u64));
        args.extend(kernel.uniform_args());
        launch(device, &kernel, t.block, grid, &args)?;
    }
    Ok(GpuVec::from_parts(out, device.clone()))
}

/// `filter` then `materialize`: count the survivors of each block's chunk, turn the counts
/// into offsets on the host (which needs the total anyway, to size the output), then write
/// the survivors in order. The call's one accumulator is the count.
fn compact<T: Element>(
    call: &mut Call,
    run: &ChainRun,
    device: &GpuDevice,
) -> GpuResult<GpuVec<T>> {
    call.settle();
    let n = run.len;
    if n == 0 {
        return Ok(GpuVec::from_parts(device.output::<T>(0)?, device.clone()));
    }
    let t = call.filter_tuning();
    let counter = call.kernel(0, |tr| {
        // The count pass's contribution: the filter condition as 0 or 1.
        let mut ir = tr.chain.clone();
        let keep = ir.mask.ok_or_else(|| chain_error("no filter"))?;
        let one = push(&mut ir, Node::Cast(keep, ScalarType::U64), ScalarType::U64);
        let acc = tr
            .accums
            .first()
            .ok_or_else(|| chain_error("internal error: no count"))?;
        let spec = Spec {
            kind: Kind::Reduce { chunked: true },
            graphs: vec![&ir.graph, &acc.combine],
            extra: vec![acc.identity],
            inputs: &ir.inputs,
            roots: vec![one, acc.root],
            mask: ir.mask,
            types: vec![acc.ty],
            tuning: t,
        };
        ready(device, spec, "iter_reduce", || {
            reduce_kernel(&ir, &[one], std::slice::from_ref(acc), &t, true)
        })
    })?;
    let k = counter.per_thread;
    let tile = t.block as usize * k as usize;
    let sms = device.context().limits().multiprocessor_count.max(1) as usize;
    let blocks = sms * t.blocks_per_sm as usize;
    let chunk = n.div_ceil(blocks).div_ceil(tile) * tile;
    let grid = n.div_ceil(chunk);
    let grid32 = u32::try_from(grid).map_err(|_| chain_error("grid too large"))?;

    let mut counts = device.output::<u64>(grid)?;
    let mut args = run.inputs.clone();
    args.push(KernelArg::slice_mut(&mut counts));
    args.push(KernelArg::scalar(n as u64));
    args.push(KernelArg::scalar(chunk as u64));
    args.extend(counter.uniform_args());
    launch(device, &counter, t.block, grid32, &args)?;

    let per_block = counts.to_host_vec(device.stream())?;
    let mut offsets = Vec::with_capacity(grid);
    let mut total = 0u64;
    for c in per_block {
        offsets.push(total);
        total += c;
    }
    let total = usize::try_from(total).map_err(|_| chain_error("count overflow"))?;
    if total > n {
        return Err(chain_error(format!(
            "internal error: the filter kept {total} of {n} elements"
        )));
    }
    let mut out = device.output::<T>(total)?;
    if total > 0 {
        counts.copy_from_host(device.stream(), &offsets)?;
        let scatter = call.kernel(1, |tr| {
            let value = tr.root(0)?;
            let spec = Spec {
                kind: Kind::Scatter { per_thread: k },
                graphs: vec![&tr.chain.graph],
                extra: Vec::new(),
                inputs: &tr.chain.inputs,
                roots: vec![value],
                mask: tr.chain.mask,
                types: vec![T::TYPE],
                tuning: t,
            };
            ready(device, spec, "iter_filter_scatter", || {
                scatter_kernel(&tr.chain, value, T::TYPE, &t, k)
            })
        })?;
        let mut args = run.inputs.clone();
        args.push(KernelArg::slice(&counts));
        args.push(KernelArg::slice_mut(&mut out));
        args.push(KernelArg::scalar(n as u64));
        args.push(KernelArg::scalar(chunk as u64));
        args.extend(scatter.uniform_args());
        launch(device, &scatter, t.block, grid32, &args)?;
    }
    Ok(GpuVec::from_parts(out, device.clone()))
}

/// Appends a node to a finished graph (it is not hash-consed: only for nodes the graph
/// cannot already contain).
fn push(ir: &mut ChainIr, node: Node, ty: ScalarType) -> NodeId {
    ir.graph.nodes.push((node, ty));
    (ir.graph.nodes.len() - 1) as NodeId
}

/// Runs a reduction of the chain's root 0 with the call's accumulators: the first one over
/// the root, and with `with_count` a second one counting the survivors of the filter. The
/// result buffers (one element each) stay on the device.
fn reduce_device<T: Element>(
    call: &mut Call,
    run: &ChainRun,
    with_count: bool,
    device: &GpuDevice,
) -> GpuResult<(DeviceBuffer<T>, Option<DeviceBuffer<u64>>)> {
    let t = call.reduction_tuning();
    let partial = call.kernel(0, |tr| {
        let mut contribs = vec![tr.root(0)?];
        let counted;
        let ir = if with_count {
            let mut ir = tr.chain.clone();
            let keep = ir.mask.ok_or_else(|| chain_error("no filter"))?;
            contribs.push(push(
                &mut ir,
                Node::Cast(keep, ScalarType::U64),
                ScalarType::U64,
            ));
            counted = ir;
            &counted
        } else {
            &tr.chain
        };
        let accs = &tr.accums;
        if accs.len() != contribs.len() {
            return Err(chain_error(
                "internal error: one accumulator per contribution",
            ));
        }
        let mut graphs = vec![&ir.graph];
        graphs.extend(accs.iter().map(|a| &a.combine));
        let mut roots = contribs.clone();
        roots.extend(accs.iter().map(|a| a.root));
        let spec = Spec {
            kind: Kind::Reduce { chunked: false },
            graphs,
            extra: accs.iter().map(|a| a.identity).collect(),
            inputs: &ir.inputs,
            roots,
            mask: ir.mask,
            types: accs.iter().map(|a| a.ty).collect(),
            tuning: t,
        };
        ready(device, spec, "iter_reduce", || {
            reduce_kernel(ir, &contribs, accs, &t, false)
        })
    })?;
    let accumulators = 1 + usize::from(with_count);
    let grid = grid_for(device, &t, run.len.div_ceil(partial.per_thread as usize));
    let mut partials = device.output::<u64>(accumulators * grid as usize)?;
    let mut args = run.inputs.clone();
    args.push(KernelArg::slice_mut(&mut partials));
    args.push(KernelArg::scalar(run.len as u64));
    args.extend(partial.uniform_args());
    launch(device, &partial, t.block, grid, &args)?;

    let last = call.kernel(1, |tr| {
        let accs = &tr.accums;
        let spec = Spec {
            kind: Kind::Final,
            graphs: accs.iter().map(|a| &a.combine).collect(),
            extra: accs.iter().map(|a| a.identity).collect(),
            inputs: &[],
            roots: accs.iter().map(|a| a.root).collect(),
            mask: None,
            types: accs.iter().map(|a| a.ty).collect(),
            tuning: t,
        };
        ready(device, spec, "iter_reduce_final", || {
            final_kernel(accs, t.block)
        })
    })?;
    let mut out = device.output::<T>(1)?;
    let mut count = with_count.then(|| device.output::<u64>(1)).transpose()?;
    let mut args = vec![KernelArg::slice(&partials), KernelArg::slice_mut(&mut out)];
    if let Some(c) = count.as_mut() {
        args.push(KernelArg::slice_mut(c));
    }
    args.push(KernelArg::scalar(u64::from(grid)));
    args.extend(last.uniform_args());
    launch(device, &last, t.block, 1, &args)?;
    Ok((out, count))
}

fn first<T: Copy>(v: Vec<T>) -> GpuResult<T> {
    v.first()
        .copied()
        .ok_or_else(|| chain_error("internal error: empty reduction result"))
}

/// A reduction with identity `identity` and function `op`; `None` when no element survives
/// a filter and `none_if_empty`.
fn run_reduce<T: Element, I: GpuIter<Item = Expr<T>>, F: Fn(Expr<T>, Expr<T>) -> Expr<T>>(
    iter: &I,
    identity: T,
    op: F,
    none_if_empty: bool,
) -> GpuResult<Option<T>> {
    let device = iter.source_device().clone();
    let terminal = if none_if_empty {
        Terminal::ReduceOrNone
    } else {
        Terminal::Reduce
    };
    let mut call = Call::new(&device, PlanKey::with_op::<I, F>(terminal));
    let run = call.chain(iter, |item, _| vec![item.r])?;
    call.accum(identity, op)?;
    let with_count = none_if_empty && run.filtered;
    if with_count {
        call.count_accum();
    }
    call.settle();
    if run.len == 0 {
        return Ok((!none_if_empty).then_some(identity));
    }
    let (out, count) = reduce_device::<T>(&mut call, &run, with_count, &device)?;
    if let Some(count) = count
        && first(count.to_host_vec(device.stream())?)? == 0
    {
        return Ok(None);
    }
    Ok(Some(first(out.to_host_vec(device.stream())?)?))
}

pub(crate) fn sum<T: Numeric, I: GpuIter<Item = Expr<T>>>(iter: &I) -> GpuResult<T> {
    Ok(run_reduce(iter, T::zero(), |a, b| a + b, false)?.unwrap_or_else(T::zero))
}

pub(crate) fn sum_on_device<T: Numeric, I: GpuIter<Item = Expr<T>>>(
    iter: &I,
) -> GpuResult<GpuVec<T>> {
    let device = iter.source_device().clone();
    let mut call = Call::new(&device, PlanKey::of::<I>(Terminal::SumOnDevice));
    let run = call.chain(iter, |item, _| vec![item.r])?;
    call.accum(T::zero(), |a, b| a + b)?;
    call.settle();
    if run.len == 0 {
        return device.upload(&[T::zero()]);
    }
    let (out, _) = reduce_device::<T>(&mut call, &run, false, &device)?;
    Ok(GpuVec::from_parts(out, device))
}

pub(crate) fn extremum<T: Numeric, I: GpuIter<Item = Expr<T>>>(
    iter: &I,
    min: bool,
) -> GpuResult<Option<T>> {
    if min {
        run_reduce(iter, T::min_identity(), |a, b| a.min(b), true)
    } else {
        run_reduce(iter, T::max_identity(), |a, b| a.max(b), true)
    }
}

pub(crate) fn reduce<T: Element, I: GpuIter<Item = Expr<T>>>(
    iter: &I,
    identity: T,
    op: impl Fn(Expr<T>, Expr<T>) -> Expr<T>,
) -> GpuResult<T> {
    Ok(run_reduce(iter, identity, op, false)?.unwrap_or(identity))
}

pub(crate) fn count<I: GpuIter>(iter: &I) -> GpuResult<usize> {
    let device = iter.source_device().clone();
    let mut call = Call::new(&device, PlanKey::of::<I>(Terminal::Count));
    let run = call.chain(iter, |_, mask| {
        mask.map(|m| m.cast::<u64>().r).into_iter().collect()
    })?;
    if run.has_roots {
        call.count_accum();
    }
    call.settle();
    if !run.has_roots {
        return Ok(run.len);
    }
    if run.len == 0 {
        return Ok(0);
    }
    let (out, _) = reduce_device::<u64>(&mut call, &run, false, &device)?;
    let n = first(out.to_host_vec(device.stream())?)?;
    usize::try_from(n).map_err(|_| chain_error("count overflow"))
}
