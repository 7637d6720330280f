//! The kernels a chain becomes, one function each. Parameter order (the launch passes
//! arguments in this order): the chain's input slices, the kernel's own slices, its scalars,
//! then the uniforms (host values of the closures and identities) in
//! [`Built::uniforms`] order.
//!
//! | kernel | used by | parameters after the inputs |
//! |---|---|---|
//! | `iter_map` | `collect`/`materialize` without `filter` | `out`, `n` |
//! | `iter_reduce` | `sum`, `min`, `max`, `reduce`, `count` after `filter`; `filter`'s per-block counts | `partials`, `n` (, `chunk`) |
//! | `iter_reduce_final` | the second step of a reduction | (`partials` is the only input) `out0`, `out1`.., `g` |
//! | `iter_filter_scatter` | `collect`/`materialize` after `filter` | `offsets`, `out`, `n`, `chunk` |

use cuprum_ir::{AddressSpace, Constant, Kernel, Op, ScalarType, SliceAccess, Value};

use super::block::{block_exclusive_scan, block_reduce, scan_arrays};
use super::traverse::{Coords, Group, Tile, chunked_tiles, grid_stride, strided_loop, visit_tile};
use super::{Accum, Env, Gen, R};
use crate::device::{Layout, Tuning};
use crate::trace::{Graph, Node, NodeId};

/// The most graph nodes a kernel lowers per loop iteration (`k` elements of `n` nodes each)
/// before it takes fewer elements per thread. Several elements per thread keep more loads in
/// flight, which a chain of a few operations needs to reach memory bandwidth; a chain of
/// hundreds of operations per element is bound by arithmetic instead, and every copy of it
/// makes the kernel larger: more PTX for the driver to compile, more registers for the
/// emulator to clear at every launch. With one element per thread the chain is lowered once.
const UNROLLED_NODES: usize = 2048;

/// A traced chain ready for code generation.
#[derive(Clone, Debug)]
pub(crate) struct ChainIr {
    pub(crate) graph: Graph,
    /// Element type of each input slot.
    pub(crate) inputs: Vec<ScalarType>,
    /// The filter condition, if the chain filters.
    pub(crate) mask: Option<NodeId>,
}

impl ChainIr {
    /// Which input slots the `roots` read.
    fn used_slots(&self, roots: &[NodeId]) -> Vec<bool> {
        let reach = self.graph.reachable(roots);
        let mut used = vec![false; self.inputs.len()];
        for (id, (node, _)) in self.graph.nodes.iter().enumerate() {
            if let (Node::Input(s), true) = (node, reach[id])
                && let Some(u) = used.get_mut(*s as usize)
            {
                *u = true;
            }
        }
        used
    }

    /// How many nodes lowering `roots` for one element makes.
    fn lowered_nodes(&self, roots: &[NodeId]) -> usize {
        self.graph.reachable(roots).iter().filter(|&&r| r).count()
    }

    /// Elements per thread and loop iteration, and per vector access, for kernels reading
    /// `roots` whose widest element has `widest` bytes: the tuning's, unless that many
    /// copies of the chain would exceed [`UNROLLED_NODES`].
    fn per_thread(&self, t: &Tuning, roots: &[NodeId], widest: u32) -> (u32, u32) {
        let nodes = self.lowered_nodes(roots).max(1);
        let mut k = t.elems_per_thread(widest);
        while k > 1 && k as usize * nodes > UNROLLED_NODES {
            k /= 2;
        }
        (k, t.vector_elems(widest).min(k))
    }

    /// The largest element size among the used inputs and `extra`, in bytes.
    fn widest(&self, roots: &[NodeId], extra: &[ScalarType]) -> u32 {
        self.used_slots(roots)
            .iter()
            .zip(&self.inputs)
            .filter(|(u, _)| **u)
            .map(|(_, t)| t.size_bytes())
            .chain(extra.iter().map(|t| t.size_bytes()))
            .max()
            .unwrap_or(4)
    }
}

/// A generated kernel and the host values its trailing parameters take.
pub(crate) struct Built {
    pub(crate) kernel: Kernel,
    pub(crate) uniforms: Vec<Constant>,
    /// Elements per thread and iteration it was generated for.
    pub(crate) per_thread: u32,
}

/// The input slices as parameters; the base address of each used one.
fn input_params(g: &mut Gen, chain: &ChainIr, roots: &[NodeId]) -> R<Vec<Option<Value>>> {
    let used = chain.used_slots(roots);
    let params: Vec<u32> = chain
        .inputs
        .iter()
        .enumerate()
        .map(|(i, &ty)| g.slice_param(&format!("in{i}"), ty, SliceAccess::ReadOnly))
        .collect();
    params
        .iter()
        .zip(used)
        .map(|(&p, u)| u.then(|| g.def(Op::SliceBase(p))).transpose())
        .collect()
}

/// The global addresses of a group's elements in a slice of `ty` at `base`: one multiply,
/// then constant offsets (which ptxas folds into the loads).
fn group_addrs(g: &mut Gen, base: Value, group: &Group, ty: ScalarType) -> R<Vec<Value>> {
    let Some(&first) = group.idxs.first() else {
        return Ok(Vec::new());
    };
    let addr0 = g.global_elem(base, first, ty)?;
    let mut addrs = vec![addr0];
    for p in 1..group.idxs.len() {
        let off = g.u64(group.offset(p) * u64::from(ty.size_bytes()));
        addrs.push(g.add(addr0, off)?);
    }
    Ok(addrs)
}

/// Whether a group's runs of `ty` elements move as vector accesses: runs of 2 or 4
/// elements, at most 16 bytes, not `bool` (whose register is not its memory form).
fn vectorized(group: &Group, ty: ScalarType) -> bool {
    matches!(group.vec, 2 | 4)
        && ty != ScalarType::Bool
        && ty.size_bytes() * group.vec <= 16
        && group.idxs.len().is_multiple_of(group.vec as usize)
}

/// Loads a group's elements of a slice of `ty` at `base`: one vector load per run where
/// [`vectorized`], else one load per element.
fn load_group(g: &mut Gen, base: Value, group: &Group, ty: ScalarType) -> R<Vec<Value>> {
    let addrs = group_addrs(g, base, group, ty)?;
    if !vectorized(group, ty) {
        return addrs
            .into_iter()
            .map(|a| g.load(AddressSpace::Global, ty, a))
            .collect();
    }
    let mut out = Vec::with_capacity(addrs.len());
    for run in addrs.chunks(group.vec as usize) {
        let first = *run.first().ok_or("internal error: empty run")?;
        out.extend(g.vector_load(AddressSpace::Global, ty, first, run.len())?);
    }
    Ok(out)
}

/// Stores `values` (one per element of `group`, of type `ty`) into a slice at `base`, as
/// [`load_group`] reads.
fn store_group(g: &mut Gen, base: Value, group: &Group, ty: ScalarType, values: &[Value]) -> R<()> {
    let addrs = group_addrs(g, base, group, ty)?;
    if !vectorized(group, ty) {
        for (&a, &v) in addrs.iter().zip(values) {
            g.store(AddressSpace::Global, a, v);
        }
        return Ok(());
    }
    let vec = group.vec as usize;
    for (run, vals) in addrs.chunks(vec).zip(values.chunks(vec)) {
        let first = *run.first().ok_or("internal error: empty run")?;
        g.vector_store(AddressSpace::Global, first, vals.to_vec())?;
    }
    Ok(())
}

/// Loads the used inputs of every element of `group` (all loads first, for memory-level
/// parallelism), then lowers `roots` for each: one `Vec` of root values per element.
fn elements(
    g: &mut Gen,
    chain: &ChainIr,
    bases: &[Option<Value>],
    group: &Group,
    roots: &[NodeId],
) -> R<Vec<Vec<Value>>> {
    let mut loaded = vec![vec![None; bases.len()]; group.idxs.len()];
    for (slot, (base, &ty)) in bases.iter().zip(&chain.inputs).enumerate() {
        let Some(base) = *base else { continue };
        for (row, v) in loaded.iter_mut().zip(load_group(g, base, group, ty)?) {
            if let Some(cell) = row.get_mut(slot) {
                *cell = Some(v);
            }
        }
    }
    group
        .idxs
        .iter()
        .zip(&loaded)
        .map(|(&idx, row)| {
            let env = Env {
                inputs: row,
                index: Some(idx),
                args: &[],
            };
            g.lower(&chain.graph, roots, &env)
        })
        .collect()
}

/// `out[i] = value(i)` for every `i < n`.
pub(crate) fn map_kernel(
    chain: &ChainIr,
    value: NodeId,
    out_ty: ScalarType,
    t: &Tuning,
) -> R<Built> {
    let mut g = Gen::new("iter_map", t.block, t.blocks_per_sm);
    let bases = input_params(&mut g, chain, &[value])?;
    let out = g.slice_param("out", out_ty, SliceAccess::Disjoint);
    let n = g.scalar_param("n", ScalarType::U64)?;
    g.declare_uniforms(&[&chain.graph], &[])?;
    let out_base = g.def(Op::SliceBase(out))?;
    let widest = chain.widest(&[value], &[out_ty]);
    let (k, vec) = chain.per_thread(t, &[value], widest);
    let c = Coords::new(&mut g)?;
    grid_stride(&mut g, &c, n, k, vec, t.layout, &mut |g, group| {
        let vals = elements(g, chain, &bases, group, &[value])?
            .into_iter()
            .map(|v| v.first().copied().ok_or("internal error: no value"))
            .collect::<Result<Vec<_>, _>>()?;
        store_group(g, out_base, group, out_ty, &vals)
    })?;
    Ok(built(g, k))
}

fn built(g: Gen, per_thread: u32) -> Built {
    let uniforms = g.uniform_list.clone();
    Built {
        kernel: g.finish(),
        uniforms,
        per_thread,
    }
}

/// Per-thread accumulators, each starting at its identity.
fn accumulators(g: &mut Gen, accs: &[Accum]) -> R<Vec<cuprum_ir::Var>> {
    accs.iter()
        .enumerate()
        .map(|(i, a)| {
            let id = g.uniform(a.identity)?;
            Ok(g.var(&format!("acc{i}"), id))
        })
        .collect()
}

/// Folds `vals` (one per accumulator) into the accumulators.
fn fold(g: &mut Gen, accs: &[Accum], vars: &[cuprum_ir::Var], vals: &[Value]) -> R<()> {
    for ((a, &var), &v) in accs.iter().zip(vars).zip(vals) {
        let cur = g.read(var)?;
        let next = g.combine(a, cur, v)?;
        g.write(var, next);
    }
    Ok(())
}

/// Each block reduces its share of the elements: `partials[a * gridDim + block]` holds the
/// bits (see `Gen::bits_of`) of accumulator `a`'s block result. Element `i` contributes
/// `contribs[a](i)`, or the identity where the chain's filter drops it. `chunked`: each block
/// takes one contiguous chunk (a `chunk` parameter follows `n`), as `filter`'s scatter needs;
/// otherwise a grid-stride loop.
pub(crate) fn reduce_kernel(
    chain: &ChainIr,
    contribs: &[NodeId],
    accs: &[Accum],
    t: &Tuning,
    chunked: bool,
) -> R<Built> {
    if contribs.len() != accs.len() || accs.is_empty() {
        return Err("internal error: one contribution per accumulator".to_owned());
    }
    let mut g = Gen::new("iter_reduce", t.block, t.blocks_per_sm);
    let mut roots = contribs.to_vec();
    roots.extend(chain.mask);
    let bases = input_params(&mut g, chain, &roots)?;
    let partials = g.slice_param("partials", ScalarType::U64, SliceAccess::Disjoint);
    let n = g.scalar_param("n", ScalarType::U64)?;
    let chunk = chunked
        .then(|| g.scalar_param("chunk", ScalarType::U64))
        .transpose()?;
    let mut graphs = vec![&chain.graph];
    graphs.extend(accs.iter().map(|a| &a.combine));
    let identities: Vec<Constant> = accs.iter().map(|a| a.identity).collect();
    g.declare_uniforms(&graphs, &identities)?;
    let partials = g.def(Op::SliceBase(partials))?;
    let widest = chain.widest(&roots, &[]);
    let (k, vec) = chain.per_thread(t, &roots, widest);
    let c = Coords::new(&mut g)?;
    let vars = accumulators(&mut g, accs)?;
    let mut visit = |g: &mut Gen, group: &Group| -> R<()> {
        for vals in elements(g, chain, &bases, group, &roots)? {
            let mut contrib = vals
                .get(..accs.len())
                .ok_or("internal error: missing contributions")?
                .to_vec();
            if let Some(&keep) = vals.get(accs.len()) {
                for (v, a) in contrib.iter_mut().zip(accs) {
                    let id = g.uniform(a.identity)?;
                    *v = g.select(keep, *v, id)?;
                }
            }
            fold(g, accs, &vars, &contrib)?;
        }
        Ok(())
    };
    match chunk {
        Some(chunk) => chunked_tiles(
            &mut g,
            &c,
            n,
            chunk,
            k,
            t.block,
            t.layout,
            &mut |g, tile| visit_tile(g, tile, k, &mut visit),
        )?,
        None => grid_stride(&mut g, &c, n, k, vec, t.layout, &mut visit)?,
    }
    let finals = vars.iter().map(|&v| g.read(v)).collect::<R<Vec<_>>>()?;
    block_reduce(&mut g, accs, finals, t.block, |g, results| {
        for (a, &r) in results.iter().enumerate() {
            let slot = g.u64(a as u64);
            let row = g.mul(slot, c.gdim)?;
            let at = g.add(row, c.bid)?;
            let addr = g.global_elem(partials, at, ScalarType::U64)?;
            let bits = g.bits_of(r)?;
            g.store(AddressSpace::Global, addr, bits);
        }
        Ok(())
    })?;
    Ok(built(g, k))
}

/// One block combines the `g` partial results of each accumulator (`partials[a * g + j]`)
/// and thread 0 writes accumulator `a`'s result to `out{a}[0]`.
pub(crate) fn final_kernel(accs: &[Accum], block: u32) -> R<Built> {
    let mut g = Gen::new("iter_reduce_final", block, 1);
    let partials = g.slice_param("partials", ScalarType::U64, SliceAccess::ReadOnly);
    let outs: Vec<u32> = accs
        .iter()
        .enumerate()
        .map(|(i, a)| g.slice_param(&format!("out{i}"), a.ty, SliceAccess::Disjoint))
        .collect();
    let count = g.scalar_param("g", ScalarType::U64)?;
    let graphs: Vec<&Graph> = accs.iter().map(|a| &a.combine).collect();
    let identities: Vec<Constant> = accs.iter().map(|a| a.identity).collect();
    g.declare_uniforms(&graphs, &identities)?;
    let partials = g.def(Op::SliceBase(partials))?;
    let outs = outs
        .iter()
        .map(|&o| g.def(Op::SliceBase(o)))
        .collect::<R<Vec<_>>>()?;
    let c = Coords::new(&mut g)?;
    let vars = accumulators(&mut g, accs)?;
    let step = g.u64(u64::from(block));
    strided_loop(&mut g, c.tid, count, step, &mut |g, j| {
        let mut vals = Vec::with_capacity(accs.len());
        for (a, acc) in accs.iter().enumerate() {
            let slot = g.u64(a as u64);
            let row = g.mul(slot, count)?;
            let at = g.add(row, j)?;
            let addr = g.global_elem(partials, at, ScalarType::U64)?;
            let word = g.load(AddressSpace::Global, ScalarType::U64, addr)?;
            vals.push(g.value_of_bits(word, acc.ty)?);
        }
        fold(g, accs, &vars, &vals)
    })?;
    let finals = vars.iter().map(|&v| g.read(v)).collect::<R<Vec<_>>>()?;
    block_reduce(&mut g, accs, finals, block, |g, results| {
        for ((&out, &r), a) in outs.iter().zip(results).zip(accs) {
            let zero = g.u64(0);
            let addr = g.global_elem(out, zero, a.ty)?;
            g.store(AddressSpace::Global, addr, r);
        }
        Ok(())
    })?;
    Ok(built(g, 1))
}

/// `filter` compaction, second pass: block `b` walks its chunk again, in order, and writes
/// each surviving value to `out[offsets[b] + (survivors before it in the chunk)]`.
///
/// Per tile of `block * k` elements, with every access to global memory coalesced:
/// 1. each warp computes its `32 k` elements lane-strided (coalesced loads) and stages value
///    and verdict in shared memory at their tile positions;
/// 2. each thread takes `k` consecutive staged elements, so thread order is element order,
///    and a block-wide exclusive scan of the per-thread counts gives every survivor its
///    rank; survivors are staged again, compacted, at their ranks;
/// 3. the block copies the compacted run to the output with consecutive threads on
///    consecutive elements.
///
/// Shared indices are padded by one element per 32, so that step 2's strided reads do not
/// conflict on banks. `k` is at most `per_thread` (which the count pass used; a smaller
/// power of two still divides the chunk) and small enough for the staging to fit in 40 KiB.
pub(crate) fn scatter_kernel(
    chain: &ChainIr,
    value: NodeId,
    out_ty: ScalarType,
    t: &Tuning,
    per_thread: u32,
) -> R<Built> {
    let keep = chain
        .mask
        .ok_or("internal error: scatter of a chain without filter")?;
    let roots = [value, keep];
    let staged = |k: u32| {
        let len = t.block * k;
        len + len / 32
    };
    let mut k = per_thread.max(1);
    while k > 1 && staged(k) * (out_ty.size_bytes() + 1) > 40 * 1024 {
        k /= 2;
    }
    let mut g = Gen::new("iter_filter_scatter", t.block, t.blocks_per_sm);
    let bases = input_params(&mut g, chain, &roots)?;
    let offsets = g.slice_param("offsets", ScalarType::U64, SliceAccess::ReadOnly);
    let out = g.slice_param("out", out_ty, SliceAccess::Disjoint);
    let n = g.scalar_param("n", ScalarType::U64)?;
    let chunk = g.scalar_param("chunk", ScalarType::U64)?;
    g.declare_uniforms(&[&chain.graph], &[])?;
    let offsets = g.def(Op::SliceBase(offsets))?;
    let out = g.def(Op::SliceBase(out))?;
    let stage_values = g.shared_array("stage_values", out_ty, staged(k))?;
    let stage_flags = g.shared_array("stage_flags", ScalarType::Bool, staged(k))?;
    let arrays = scan_arrays(&mut g, t.block)?;
    let c = Coords::new(&mut g)?;
    let at = g.global_elem(offsets, c.bid, ScalarType::U64)?;
    let first = g.load(AddressSpace::Global, ScalarType::U64, at)?;
    let pos = g.var("pos", first);
    let zero_value = g.konst(Constant::new(out_ty, 0));
    let no = g.konst(Constant::bool(false));
    let tid = g.tid()?;
    let kk = g.u32(k);
    let own = g.mul(tid, kk)?;
    let block = g.u64(u64::from(t.block));
    // The padded shared index of tile position `p` (`U32`).
    let pad = |g: &mut Gen, p: Value| {
        let five = g.u32(5);
        let row = g.bin(cuprum_ir::BinaryOp::Shr, p, five)?;
        g.add(p, row)
    };
    let layout = Layout::WarpStrided;
    chunked_tiles(
        &mut g,
        &c,
        n,
        chunk,
        k,
        t.block,
        layout,
        &mut |g, tile: &Tile| {
            // 1. Value and verdict of this thread's lane-strided elements, in variables so
            //    that a guarded tile can fill them conditionally, then staged.
            let vals: Vec<_> = (0..k)
                .map(|j| g.var(&format!("v{j}"), zero_value))
                .collect();
            let flags: Vec<_> = (0..k).map(|j| g.var(&format!("f{j}"), no)).collect();
            let mut j = 0usize;
            let mut visit = |g: &mut Gen, group: &Group| -> R<()> {
                for r in elements(g, chain, &bases, group, &roots)? {
                    let (Some(&v), Some(&f)) = (r.first(), r.get(1)) else {
                        return Err("internal error: scatter roots".to_owned());
                    };
                    let (Some(&vv), Some(&fv)) = (vals.get(j), flags.get(j)) else {
                        return Err("internal error: scatter element count".to_owned());
                    };
                    g.write(vv, v);
                    g.write(fv, f);
                    j += 1;
                }
                Ok(())
            };
            visit_tile(g, tile, k, &mut visit)?;
            let local = g.bin(cuprum_ir::BinaryOp::Sub, tile.base, tile.start)?;
            let local = g.cast(local, ScalarType::U32)?;
            for (j, (&v, &f)) in vals.iter().zip(&flags).enumerate() {
                let off = g.u32(j as u32 * tile.stride as u32);
                let p = g.add(local, off)?;
                let q = pad(g, p)?;
                let v = g.read(v)?;
                let f = g.read(f)?;
                let addr = g.shared_elem(stage_values, q, out_ty)?;
                g.store(AddressSpace::Shared, addr, v);
                let addr = g.shared_elem(stage_flags, q, ScalarType::Bool)?;
                g.store(AddressSpace::Shared, addr, f);
            }
            g.barrier();
            // 2. Consecutive elements per thread; ranks from the block scan; survivors
            //    staged again at their ranks.
            let mut count = g.u32(0);
            let mut mine = Vec::with_capacity(k as usize);
            for j in 0..k {
                let off = g.u32(j);
                let p = g.add(own, off)?;
                let q = pad(g, p)?;
                let addr = g.shared_elem(stage_values, q, out_ty)?;
                let v = g.load(AddressSpace::Shared, out_ty, addr)?;
                let addr = g.shared_elem(stage_flags, q, ScalarType::Bool)?;
                let f = g.load(AddressSpace::Shared, ScalarType::Bool, addr)?;
                let one = g.cast(f, ScalarType::U32)?;
                count = g.add(count, one)?;
                mine.push((v, f));
            }
            let (exclusive, total) = block_exclusive_scan(g, &arrays, count, t.block)?;
            let mut rank = exclusive;
            for (v, f) in mine {
                let here = rank;
                g.if_(f, |g| {
                    let q = pad(g, here)?;
                    let addr = g.shared_elem(stage_values, q, out_ty)?;
                    g.store(AddressSpace::Shared, addr, v);
                    Ok(())
                })?;
                let step = g.cast(f, ScalarType::U32)?;
                rank = g.add(rank, step)?;
            }
            g.barrier();
            // 3. The compacted run, copied out by consecutive threads.
            let p = g.read(pos)?;
            let total = g.cast(total, ScalarType::U64)?;
            strided_loop(g, c.tid, total, block, &mut |g, i| {
                let i32 = g.cast(i, ScalarType::U32)?;
                let q = pad(g, i32)?;
                let addr = g.shared_elem(stage_values, q, out_ty)?;
                let v = g.load(AddressSpace::Shared, out_ty, addr)?;
                let at = g.add(p, i)?;
                let addr = g.global_elem(out, at, out_ty)?;
                g.store(AddressSpace::Global, addr, v);
                Ok(())
            })?;
            let next = g.add(p, total)?;
            g.write(pos, next);
            g.barrier();
            Ok(())
        },
    )?;
    Ok(built(g, k))
}
