//! Kernel parameters (the launch contract's [`ArgSlot`]s), and loads and stores of tiles.
//!
//! A tile's element at tile coordinates `c` is the tensor's element at `origin + c`, where
//! `origin` is the tile index times the tile shape; it is inside the tensor when
//! `0 <= origin + c < dim` on every axis, at element `offset + sum((origin + c) * stride)` of
//! the allocation. Each access is emitted twice, behind one block-uniform branch:
//!
//! * the fast path, for a tile wholly inside the tensor (every tile but the edges) whose
//!   runs can be vector accesses: no per-element test; where the layout gives each thread
//!   runs of consecutive elements along the last axis, the tensor's last stride must be 1
//!   and its offset and other strides multiples of the run (checked at run time, so that
//!   the run's address is aligned), and each run is one vector access of up to 16 bytes
//!   (a layout without runs has no such condition, and each element is one scalar access);
//! * the edge path, for every other tile (edges, and views whose runs are not aligned):
//!   every element tested, outside ones read as the padding value or dropped.
//!
//! Where the launch guarantees it ([`TensorFacts`]): no alignment test for a tensor whose
//! runs are aligned (and its last stride is the constant 1), and for an access whose tile
//! extents divide the tensor's sizes, no edge path: its tiles are wholly inside or wholly
//! outside, so the branch is the fast path or all padding (a load) or nothing (a store).
//!
//! Stores write each element once, from its owner (see [`crate::layout`]).

use cuprum_ir::{
    AddressSpace, BinaryOp, CmpOp, Dim, Eviction, Op, ParamKind, ScalarType, SliceAccess, Special,
    Stmt, Value,
};
use cuprum_tile_ir::{
    Axis, Literal, ParamKind as TParamKind, TensorAccess, TensorDim, TileKernel, TileValue, View,
    known_sizes,
};

use super::{Emitter, Lv, R};
use crate::plan::{LayoutId, Repr};
use crate::{ArgSlot, TensorFacts};

/// What the kernel IR parameters of one tile parameter give.
pub(super) enum ParamArgs {
    /// A scalar parameter's value.
    Scalar(Value),
    /// A tensor's allocation, offset, sizes and strides.
    Tensor(TensorArgs),
}

/// A tensor parameter's kernel IR values (`I64` unless noted).
pub(super) struct TensorArgs {
    /// The allocation's base address (`U64`).
    pub(super) base: Value,
    pub(super) offset: Value,
    pub(super) dims: Vec<Value>,
    pub(super) strides: Vec<Value>,
    /// What the launch guarantees about it (see [`TensorFacts`]).
    pub(super) facts: TensorFacts,
}

/// Per tile parameter, whether a barrier must follow each access: a partitioned tensor
/// stored or loaded through its own tile at more than one place, where different threads
/// may write and then read (or write again) one element; and a raw pointer that the kernel
/// scatters to, since which thread touches an element depends on the offsets (even one
/// scatter in a loop may write an element from one thread, then from another).
pub(super) fn barrier_after(kernel: &TileKernel) -> Vec<bool> {
    let mut sites = vec![0usize; kernel.params.len()];
    let mut scattered = vec![false; kernel.params.len()];
    kernel.body.visit(&mut |s| match s {
        cuprum_tile_ir::Stmt::Scatter { tensor, .. } => {
            if let Some(x) = scattered.get_mut(*tensor as usize) {
                *x = true;
            }
        }
        cuprum_tile_ir::Stmt::Store { tensor, .. }
        | cuprum_tile_ir::Stmt::StorePart { tensor, .. }
        | cuprum_tile_ir::Stmt::Def {
            op:
                cuprum_tile_ir::Op::Load {
                    view: View::Own { tensor },
                    ..
                },
            ..
        } => {
            if let Some(n) = sites.get_mut(*tensor as usize) {
                *n += 1;
            }
        }
        _ => {}
    });
    sites
        .into_iter()
        .zip(scattered)
        .map(|(n, scattered)| n > 1 || scattered)
        .collect()
}

/// The widest vector access, in bytes.
const MAX_VECTOR_BYTES: u32 = 16;
/// The most elements one vector access moves (the kernel IR's `VectorLoad` takes 2 or 4).
const MAX_VECTOR_ELEMENTS: u32 = 4;

/// Where a sub-tile store's tile lies in the own tile of its tensor.
struct SubTile {
    /// Per axis, the sub-tile's first own-tile coordinate (`index * tile`, `I64`).
    offsets: Vec<Value>,
    /// The own tile's shape.
    own: Vec<u32>,
}

/// Where a tile lies in its tensor, from one thread's point of view.
pub(super) struct Placement {
    pub(super) tensor: u32,
    /// The tile's shape.
    pub(super) shape: Vec<u32>,
    /// Per axis, the tensor coordinate of the tile's first element (`I64`).
    pub(super) origin: Vec<Value>,
}

impl Emitter<'_> {
    /// Declares the kernel IR parameters of every tile parameter, in order (the launch
    /// contract), and reads them.
    pub(super) fn declare_params(&mut self, facts: &[TensorFacts]) -> R<()> {
        for (index, p) in self.kernel.params.iter().enumerate() {
            let index = index as u32;
            match &p.kind {
                TParamKind::Scalar(e) => {
                    let ty = e
                        .known()
                        .ok_or_else(|| crate::LowerError::Generic(self.kernel.name.clone()))?;
                    let i = self.b.param(p.name.clone(), ParamKind::Scalar(ty));
                    self.args.push(ArgSlot::Scalar { param: index });
                    let v = self.def(Op::Param(i))?;
                    self.params.push(ParamArgs::Scalar(v));
                }
                TParamKind::Tensor(t) => {
                    let elem = t
                        .elem
                        .known()
                        .ok_or_else(|| crate::LowerError::Generic(self.kernel.name.clone()))?;
                    let access = match t.access {
                        TensorAccess::Read => SliceAccess::ReadOnly,
                        TensorAccess::Partitioned | TensorAccess::Raw | TensorAccess::Mapped => {
                            SliceAccess::ReadWrite
                        }
                    };
                    let slice = self
                        .b
                        .param(p.name.clone(), ParamKind::Slice { elem, access });
                    self.args.push(ArgSlot::TensorData { param: index });
                    let base = self.def(Op::SliceBase(slice))?;
                    let offset = self.i64_param(format!("{}_offset", p.name))?;
                    self.args.push(ArgSlot::TensorOffset { param: index });
                    let mut dims = Vec::with_capacity(t.rank());
                    for (axis, d) in t.dims.iter().enumerate() {
                        let v = self.i64_param(format!("{}_dim{axis}", p.name))?;
                        self.args.push(ArgSlot::TensorDim {
                            param: index,
                            axis: axis as u32,
                        });
                        // A read-only tensor's static size is checked at launch: use it.
                        let v = match (t.access, d) {
                            (TensorAccess::Read, TensorDim::Static(n)) => match n.known() {
                                Some(n) => self.i64c(i64::from(n)),
                                None => v,
                            },
                            _ => v,
                        };
                        dims.push(v);
                    }
                    let mut strides = Vec::with_capacity(t.rank());
                    for axis in 0..t.rank() {
                        strides.push(self.i64_param(format!("{}_stride{axis}", p.name))?);
                        self.args.push(ArgSlot::TensorStride {
                            param: index,
                            axis: axis as u32,
                        });
                    }
                    let facts = facts.get(index as usize).cloned().unwrap_or_default();
                    // Runs known aligned: the last stride is the constant 1 everywhere.
                    if facts.aligned_runs
                        && let Some(last) = strides.last_mut()
                    {
                        *last = self.i64c(1);
                    }
                    self.params.push(ParamArgs::Tensor(TensorArgs {
                        base,
                        offset,
                        dims,
                        strides,
                        facts,
                    }));
                }
            }
        }
        Ok(())
    }

    fn i64_param(&mut self, name: String) -> R<Value> {
        let i = self.b.param(name, ParamKind::Scalar(ScalarType::I64));
        self.def(Op::Param(i))
    }

    pub(super) fn scalar_param(&self, index: u32) -> R<Value> {
        match self.params.get(index as usize) {
            Some(ParamArgs::Scalar(v)) => Ok(*v),
            _ => Err(self.internal(format!("parameter {index} is not a scalar"))),
        }
    }

    pub(super) fn tensor(&self, index: u32) -> R<&TensorArgs> {
        match self.params.get(index as usize) {
            Some(ParamArgs::Tensor(t)) => Ok(t),
            _ => Err(self.internal(format!("parameter {index} is not a tensor"))),
        }
    }

    pub(super) fn tensor_dim(&self, tensor: u32, axis: u32) -> R<Value> {
        self.tensor(tensor)?
            .dims
            .get(axis as usize)
            .copied()
            .ok_or_else(|| self.internal(format!("tensor {tensor} has no axis {axis}")))
    }

    /// Read-only tensor `tensor` with its axes permuted by `dim_map` (axis `i` is the
    /// tensor's axis `dim_map[i]`): a new tensor slot sharing its allocation and offset,
    /// whose sizes and strides are the tensor's in that order.
    fn permuted_tensor(&mut self, tensor: u32, dim_map: &[Axis]) -> R<u32> {
        let t = self.tensor(tensor)?;
        let axes: Option<Vec<usize>> = dim_map
            .iter()
            .map(|a| a.known().map(|a| a as usize))
            .collect();
        let facts = axes.map_or_else(TensorFacts::default, |axes| t.facts.permuted(&axes));
        let pick = |a: &Axis| {
            let a = a.known()? as usize;
            Some((*t.dims.get(a)?, *t.strides.get(a)?))
        };
        let (dims, strides): (Vec<Value>, Vec<Value>) = dim_map
            .iter()
            .map(pick)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.internal("a permuted load whose axes are not the tensor's"))?
            .into_iter()
            .unzip();
        let permuted = TensorArgs {
            base: t.base,
            offset: t.offset,
            dims,
            strides,
            facts,
        };
        self.params.push(ParamArgs::Tensor(permuted));
        u32::try_from(self.params.len() - 1).map_err(|_| self.internal("too many tensor slots"))
    }

    /// The tile a block owns of partitioned tensor `tensor`: its index along tensor axis `d`
    /// is the tile block's index along grid axis `d` (the hardware block's, unless the
    /// lowering deals tile blocks in an order of its own: `block_index`).
    fn own_tile(&mut self, tensor: u32, shape: Vec<u32>) -> R<Placement> {
        let mut origin = Vec::with_capacity(shape.len());
        for (d, &n) in shape.iter().enumerate() {
            let dim = [Dim::X, Dim::Y, Dim::Z]
                .get(d)
                .copied()
                .ok_or_else(|| self.unsupported("a partitioned tensor of rank above 3"))?;
            let b = match self.block_index.and_then(|index| index.get(d).copied()) {
                Some(b) => b,
                None => self.def(Op::Special(Special::BlockIdx(dim)))?,
            };
            let b = self.cast(b, ScalarType::I64)?;
            let n = self.i64c(i64::from(n));
            origin.push(self.mul(b, n)?);
        }
        Ok(Placement {
            tensor,
            shape,
            origin,
        })
    }

    /// Loads `value` (see the module docs).
    pub(super) fn load(&mut self, value: TileValue, view: &View, padding: Literal) -> R<Lv> {
        let ty = self.elem(value)?;
        let pad = padding
            .to_constant(ty)
            .ok_or_else(|| self.unsupported(format!("the padding {padding} cannot be a {ty}")))?;
        let pad = self.konst(pad);
        if let Some(lv) = self.defer_staged_load(value, pad)? {
            return Ok(lv);
        }
        let eviction = self.evictions.get(&value).copied().unwrap_or_default();
        let place = self.placement(value, view)?;
        let lv = match self.repr(value)? {
            Repr::Dist(layout) => {
                let negative_origin = !matches!(view, View::Own { .. });
                let regs = self.load_tile(&place, layout, ty, pad, negative_origin, eviction)?;
                Lv::Dist { layout, regs }
            }
            // A rank-0 tensor: one element, which every thread reads.
            _ => {
                let t = self.tensor(place.tensor)?;
                let (base, offset) = (t.base, t.offset);
                let addr = self.element_address(base, offset, ty)?;
                Lv::Uniform(self.def(Op::Load {
                    space: AddressSpace::Global,
                    ty,
                    addr,
                    eviction,
                })?)
            }
        };
        if self.barrier_after.get(place.tensor as usize) == Some(&true) {
            self.barrier();
        }
        Ok(lv)
    }

    /// Where `value`, a load through `view`, lies in its tensor.
    pub(super) fn placement(&mut self, value: TileValue, view: &View) -> R<Placement> {
        let shape = self.shape(value)?;
        Ok(match view {
            View::Own { tensor } => self.own_tile(*tensor, shape)?,
            View::Tiled { tensor, index, .. } | View::Permuted { tensor, index, .. } => {
                // A permuted view is the tensor with its sizes and strides in the view's
                // axis order: a tensor of its own to the accesses below.
                let tensor = match view {
                    View::Permuted { dim_map, .. } => self.permuted_tensor(*tensor, dim_map)?,
                    _ => *tensor,
                };
                let mut origin = Vec::with_capacity(shape.len());
                for (&i, &n) in index.iter().zip(&shape) {
                    let i = self.uniform(i)?;
                    let i = self.cast(i, ScalarType::I64)?;
                    let i = self.clamp_tile_index(i, n)?;
                    let n = self.i64c(i64::from(n));
                    origin.push(self.mul(i, n)?);
                }
                Placement {
                    tensor,
                    shape,
                    origin,
                }
            }
        })
    }

    /// Tile index `i` (`I64`) of tiles of `n` elements, clamped to `±(i64::MAX / n - 1)`:
    /// a tile that far out lies outside any tensor (whose sizes are below `2^63 - 2n`)
    /// either way, and the clamped one's origin and end still fit in `I64`, where the
    /// product of a larger index would wrap onto the tensor. (A `u64` index past
    /// `i64::MAX` converts to a negative one, also outside.)
    fn clamp_tile_index(&mut self, i: Value, n: u32) -> R<Value> {
        let limit = i64::MAX / i64::from(n.max(1)) - 1;
        let (lo, hi) = (self.i64c(-limit), self.i64c(limit));
        let i = self.bin(BinaryOp::Max, i, lo)?;
        self.bin(BinaryOp::Min, i, hi)
    }

    /// The address (`U64`) of element `index` (`I64`) of an allocation of `ty` at `base`.
    pub(super) fn element_address(
        &mut self,
        base: Value,
        index: Value,
        ty: ScalarType,
    ) -> R<Value> {
        let off = self.element_bytes(index, ty)?;
        self.add(base, off)
    }

    /// The bytes (`U64`) `index` (`I64`) elements of `ty` take.
    pub(super) fn element_bytes(&mut self, index: Value, ty: ScalarType) -> R<Value> {
        let i = self.cast(index, ScalarType::U64)?;
        let size = self.konst(cuprum_ir::Constant::u64(u64::from(ty.size_bytes())));
        self.mul(i, size)
    }

    /// Whether the whole tile lies inside the tensor (`negative_origin`: whether the origin
    /// may be negative, i.e. the tile index comes from the program).
    pub(super) fn tile_inside(
        &mut self,
        place: &Placement,
        negative_origin: bool,
    ) -> R<Option<Value>> {
        let dims = self.tensor(place.tensor)?.dims.clone();
        let mut acc = None;
        for ((&o, &n), &dim) in place.origin.iter().zip(&place.shape).zip(&dims) {
            let n = self.i64c(i64::from(n));
            let end = self.add(o, n)?;
            let fits = self.cmp(CmpOp::Le, end, dim)?;
            acc = self.and(acc, Some(fits))?;
            if negative_origin {
                let zero = self.i64c(0);
                let nonneg = self.cmp(CmpOp::Ge, o, zero)?;
                acc = self.and(acc, Some(nonneg))?;
            }
        }
        Ok(acc)
    }

    /// The vector width for accesses of `ty` elements in layout `layout` of a tile of
    /// `shape` (1: scalar accesses).
    fn access_width(&self, layout: LayoutId, shape: &[u32], ty: ScalarType) -> u32 {
        if ty == ScalarType::Bool || shape.is_empty() {
            return 1;
        }
        let max = (MAX_VECTOR_BYTES / ty.size_bytes()).min(MAX_VECTOR_ELEMENTS);
        let w = self.plan.layout(layout).vector_width(max);
        if shape[shape.len() - 1].is_multiple_of(w) {
            w
        } else {
            1
        }
    }

    /// Whether runs of `w` elements of the tensor start 16-byte aligned (`None` for `w = 1`
    /// and where the launch guarantees it): its last stride is 1 and its offset and other
    /// strides are multiples of `w`.
    pub(super) fn runs_aligned(&mut self, tensor: u32, w: u32) -> R<Option<Value>> {
        let t = self.tensor(tensor)?;
        if w <= 1 || t.facts.aligned_runs {
            return Ok(None);
        }
        let (offset, strides) = (t.offset, t.strides.clone());
        let Some((&last, rest)) = strides.split_last() else {
            return Ok(None);
        };
        let one = self.i64c(1);
        let unit = self.cmp(CmpOp::Eq, last, one)?;
        let mut bits = offset;
        for &s in rest {
            bits = self.bin(BinaryOp::Or, bits, s)?;
        }
        let m = self.i64c(i64::from(w) - 1);
        let low = self.bin(BinaryOp::And, bits, m)?;
        let zero = self.i64c(0);
        let aligned = self.cmp(CmpOp::Eq, low, zero)?;
        Ok(Some(self.bin(BinaryOp::And, unit, aligned)?))
    }

    /// Per axis, the tensor coordinate (`I64`) of register `reg`'s element: `origin + c`,
    /// with `c` clamped to the tile.
    fn tensor_coords(&mut self, place: &Placement, layout: LayoutId, reg: usize) -> R<Vec<Value>> {
        (0..place.shape.len())
            .map(|d| {
                let c = self.coord(layout, reg, d)?;
                let c = self.cast(c, ScalarType::I64)?;
                self.add(place.origin[d], c)
            })
            .collect()
    }

    /// The allocation index (`I64`) of tensor coordinates `g`, with `strides`.
    pub(super) fn tensor_index(&mut self, tensor: u32, g: &[Value], strides: &[Value]) -> R<Value> {
        let mut acc = self.tensor(tensor)?.offset;
        for (&x, &s) in g.iter().zip(strides) {
            let term = self.mul(x, s)?;
            acc = self.add(acc, term)?;
        }
        Ok(acc)
    }

    /// Whether tensor coordinates `g` are inside the tensor (`0 <= g < dim` per axis, one
    /// unsigned comparison each).
    fn in_tensor(&mut self, tensor: u32, g: &[Value]) -> R<Option<Value>> {
        let dims = self.tensor(tensor)?.dims.clone();
        let mut acc = None;
        for (&x, &dim) in g.iter().zip(&dims) {
            let x = self.cast(x, ScalarType::U64)?;
            let dim = self.cast(dim, ScalarType::U64)?;
            let inside = self.cmp(CmpOp::Lt, x, dim)?;
            acc = self.and(acc, Some(inside))?;
        }
        Ok(acc)
    }

    /// The strides the fast path addresses with: the last one is the constant 1 when runs
    /// are vectors (the branch checked it).
    pub(super) fn fast_strides(&mut self, tensor: u32, w: u32) -> R<Vec<Value>> {
        let mut strides = self.tensor(tensor)?.strides.clone();
        if w > 1
            && let Some(last) = strides.last_mut()
        {
            *last = self.i64c(1);
        }
        Ok(strides)
    }

    /// The part of the allocation index every register of the thread shares:
    /// `offset + sum((origin + base) * stride)`.
    fn thread_index(&mut self, place: &Placement, layout: LayoutId, strides: &[Value]) -> R<Value> {
        let g = (0..place.shape.len())
            .map(|d| {
                let b = self.coords[layout].bases[d];
                let b = self.cast(b, ScalarType::I64)?;
                self.add(place.origin[d], b)
            })
            .collect::<R<Vec<_>>>()?;
        self.tensor_index(place.tensor, &g, strides)
    }

    /// The allocation index of a register that never clamps: the thread's index plus the
    /// register's constant offsets times the strides.
    fn register_index(
        &mut self,
        thread_index: Value,
        layout: LayoutId,
        reg: usize,
        strides: &[Value],
    ) -> R<Value> {
        let offsets = self.plan.layout(layout).register(reg).to_vec();
        let mut acc = thread_index;
        for (&o, &s) in offsets.iter().zip(strides) {
            if o == 0 {
                continue;
            }
            let k = self.i64c(i64::from(o));
            let term = self.mul(k, s)?;
            acc = self.add(acc, term)?;
        }
        Ok(acc)
    }

    /// Whether register `reg` never clamps along any axis.
    fn never_clamps(&self, layout: LayoutId, reg: usize) -> bool {
        let l = self.plan.layout(layout);
        (0..l.rank()).all(|d| !l.may_clamp(reg, d))
    }

    /// The registers of a tile load (see the module docs).
    pub(super) fn load_tile(
        &mut self,
        place: &Placement,
        layout: LayoutId,
        ty: ScalarType,
        pad: Value,
        negative_origin: bool,
        eviction: Eviction,
    ) -> R<Vec<Value>> {
        let n = self.plan.layout(layout).registers();
        let w = self.access_width(layout, &place.shape, ty);
        let inside = self.tile_inside(place, negative_origin)?;
        let aligned = self.runs_aligned(place.tensor, w)?;
        let whole = self.tensor(place.tensor)?.facts.whole_tiles(&place.shape);
        let vars: Vec<_> = (0..n).map(|_| self.var(ty)).collect();
        let base = self.tensor(place.tensor)?.base;
        let fast_path = |e: &mut Self, w: u32| -> R<()> {
            let strides = e.fast_strides(place.tensor, w)?;
            let thread = e.thread_index(place, layout, &strides)?;
            for start in (0..n).step_by(w as usize) {
                let run: Vec<usize> = (start..start + w as usize).collect();
                if run.iter().all(|&r| e.never_clamps(layout, r)) {
                    let i = e.register_index(thread, layout, start, &strides)?;
                    let addr = e.element_address(base, i, ty)?;
                    e.load_run(addr, ty, &run, &vars, eviction)?;
                    continue;
                }
                // A run that may pass the tile's end: a vector where it does not (the whole
                // run is in or out, as runs divide the last axis), else each element at its
                // clamped coordinates.
                let valid = e.valid(layout, start)?;
                let scalar = |e: &mut Self| -> R<()> {
                    for &r in &run {
                        let g = e.tensor_coords(place, layout, r)?;
                        let i = e.tensor_index(place.tensor, &g, &strides)?;
                        let addr = e.element_address(base, i, ty)?;
                        let v = e.def(Op::Load {
                            space: AddressSpace::Global,
                            ty,
                            addr,
                            eviction,
                        })?;
                        e.write(vars[r], v);
                    }
                    Ok(())
                };
                match (valid, w > 1) {
                    (Some(valid), true) => e.if_else(
                        valid,
                        |e| {
                            let g = e.tensor_coords(place, layout, start)?;
                            let i = e.tensor_index(place.tensor, &g, &strides)?;
                            let addr = e.element_address(base, i, ty)?;
                            e.load_run(addr, ty, &run, &vars, eviction)
                        },
                        scalar,
                    )?,
                    _ => scalar(e)?,
                }
            }
            Ok(())
        };
        let edge_path = |e: &mut Self| -> R<()> {
            let strides = e.tensor(place.tensor)?.strides.clone();
            for (r, &var) in vars.iter().enumerate() {
                let g = e.tensor_coords(place, layout, r)?;
                let inside = e.in_tensor(place.tensor, &g)?;
                e.write(var, pad);
                e.if_some(inside, |e| {
                    let i = e.tensor_index(place.tensor, &g, &strides)?;
                    let addr = e.element_address(base, i, ty)?;
                    let v = e.def(Op::Load {
                        space: AddressSpace::Global,
                        ty,
                        addr,
                        eviction,
                    })?;
                    e.write(var, v);
                    Ok(())
                })?;
            }
            Ok(())
        };
        let outside = |e: &mut Self| -> R<()> {
            for &var in &vars {
                e.write(var, pad);
            }
            Ok(())
        };
        if whole && aligned.is_none() {
            self.inside_or_outside(inside, w, &fast_path, outside)?;
        } else {
            self.inside_or_edge(inside, aligned, w, &fast_path, edge_path)?;
        }
        vars.iter().map(|&v| self.read(v)).collect()
    }

    /// The branches of one access: when the tile lies inside the tensor and its runs of `w`
    /// are aligned, `fast` with those runs, otherwise `edge`. A tile inside the tensor
    /// whose runs are not aligned (a strided or permuted view) takes the edge path too, whose
    /// tests then all pass: two copies of each access instead of three, which is a third
    /// less machine code for the driver to compile, for a compare per element on views that
    /// cannot be vectorized anyway.
    pub(super) fn inside_or_edge(
        &mut self,
        inside: Option<Value>,
        aligned: Option<Value>,
        w: u32,
        fast: &dyn Fn(&mut Self, u32) -> R<()>,
        edge: impl FnOnce(&mut Self) -> R<()>,
    ) -> R<()> {
        match self.and(inside, aligned)? {
            Some(fast_ok) => self.if_else(fast_ok, |e| fast(e, w), edge),
            None => fast(self, w),
        }
    }

    /// The branches of one access to a tensor whose tiles are wholly inside or wholly outside
    /// it ([`TensorFacts::whole_tiles`]) and whose runs of `w` need no alignment test:
    /// `fast` when the tile is inside, else `outside` (padding for a load, nothing for a
    /// store). No element is tested.
    fn inside_or_outside(
        &mut self,
        inside: Option<Value>,
        w: u32,
        fast: &dyn Fn(&mut Self, u32) -> R<()>,
        outside: impl FnOnce(&mut Self) -> R<()>,
    ) -> R<()> {
        match inside {
            Some(inside) => self.if_else(inside, |e| fast(e, w), outside),
            None => fast(self, w),
        }
    }

    /// Loads the run of registers `run` (consecutive elements from `addr`) into their
    /// variables: one vector load, or one scalar load for a run of one.
    fn load_run(
        &mut self,
        addr: Value,
        ty: ScalarType,
        run: &[usize],
        vars: &[cuprum_ir::Var],
        eviction: Eviction,
    ) -> R<()> {
        if run.len() == 1 {
            let v = self.def(Op::Load {
                space: AddressSpace::Global,
                ty,
                addr,
                eviction,
            })?;
            self.write(vars[run[0]], v);
            return Ok(());
        }
        let r = self
            .b
            .vector_load_evicting(AddressSpace::Global, ty, addr, run.len(), eviction);
        let vs = self.built(r)?;
        for (&reg, v) in run.iter().zip(vs) {
            self.write(vars[reg], v);
        }
        Ok(())
    }

    /// Stores `value` to the current tile of the innermost loop over mapped output
    /// `tensor`'s tiles.
    pub(super) fn store_mapped(&mut self, tensor: u32, value: TileValue) -> R<()> {
        let origin = self
            .mapped
            .iter()
            .rev()
            .find(|(t, _)| *t == tensor)
            .map(|(_, origin)| origin.clone())
            .ok_or_else(|| self.internal("a mapped store outside a loop over its tiles"))?;
        let shape = self.shape(value)?;
        self.store_tile(
            Placement {
                tensor,
                shape,
                origin,
            },
            value,
            None,
        )
    }

    /// The number of tiles of `tile` along each axis of mapped output `tensor` (`I64`,
    /// `ceil(size / tile)`).
    pub(super) fn tile_counts(&mut self, tensor: u32, tile: &[u32]) -> R<Vec<Value>> {
        let mut counts = Vec::with_capacity(tile.len());
        for (axis, &t) in tile.iter().enumerate() {
            let dim = self.tensor_dim(tensor, axis as u32)?;
            let less = self.i64c(i64::from(t) - 1);
            let t = self.i64c(i64::from(t));
            let up = self.add(dim, less)?;
            counts.push(self.bin(BinaryOp::Div, up, t)?);
        }
        Ok(counts)
    }

    /// Stores `value` to the tile this block owns of partitioned tensor `tensor`.
    pub(super) fn store(&mut self, tensor: u32, value: TileValue) -> R<()> {
        let shape = self.shape(value)?;
        let place = self.own_tile(tensor, shape)?;
        self.store_tile(place, value, None)
    }

    /// Stores `value` to sub-tile `index` of the tile this block owns of partitioned tensor
    /// `tensor` (`Stmt::StorePart`): the element at coordinate `c` goes to own-tile
    /// coordinate `index * shape + c`, and is dropped when that lies outside the own tile or
    /// outside the tensor.
    pub(super) fn store_part(
        &mut self,
        tensor: u32,
        index: &[TileValue],
        value: TileValue,
    ) -> R<()> {
        let shape = self.shape(value)?;
        let own = self.own_shape(tensor)?;
        if own.len() != shape.len() || index.len() != shape.len() {
            return Err(self.internal("a sub-tile store of another rank than its tensor"));
        }
        let own_place = self.own_tile(tensor, own.clone())?;
        let mut offsets = Vec::with_capacity(shape.len());
        let mut origin = Vec::with_capacity(shape.len());
        for ((&i, &n), &o) in index.iter().zip(&shape).zip(&own_place.origin) {
            let i = self.uniform(i)?;
            let i = self.cast(i, ScalarType::I64)?;
            let n = self.i64c(i64::from(n));
            let s = self.mul(i, n)?;
            origin.push(self.add(o, s)?);
            offsets.push(s);
        }
        let place = Placement {
            tensor,
            shape,
            origin,
        };
        self.store_tile(place, value, Some(SubTile { offsets, own }))
    }

    /// The tile shape of partitioned tensor `tensor` (the tile each block owns).
    fn own_shape(&self, tensor: u32) -> R<Vec<u32>> {
        let tile = match self.kernel.params.get(tensor as usize).map(|p| &p.kind) {
            Some(TParamKind::Tensor(t)) => t.partition_tile(),
            _ => None,
        };
        tile.and_then(|t| known_sizes(&t))
            .ok_or_else(|| self.internal(format!("parameter {tensor} is not a partitioned tensor")))
    }

    /// Whether sub-tile `sub`'s elements from `origin` lie wholly inside the own tile:
    /// `0 <= offset` and `offset + shape <= own` on every axis.
    fn sub_tile_inside(&mut self, sub: &SubTile, shape: &[u32]) -> R<Option<Value>> {
        let mut acc = None;
        for ((&s, &n), &o) in sub.offsets.iter().zip(shape).zip(&sub.own) {
            let zero = self.i64c(0);
            let nonneg = self.cmp(CmpOp::Ge, s, zero)?;
            let n = self.i64c(i64::from(n));
            let end = self.add(s, n)?;
            let o = self.i64c(i64::from(o));
            let fits = self.cmp(CmpOp::Le, end, o)?;
            let both = self.bin(BinaryOp::And, nonneg, fits)?;
            acc = self.and(acc, Some(both))?;
        }
        Ok(acc)
    }

    /// Whether register `reg`'s element of a sub-tile store lands inside the own tile
    /// (`0 <= offset + c < own` per axis, one unsigned comparison each).
    fn in_own_tile(&mut self, sub: &SubTile, layout: LayoutId, reg: usize) -> R<Option<Value>> {
        let mut acc = None;
        for (d, (&s, &o)) in sub.offsets.iter().zip(&sub.own).enumerate() {
            let c = self.coord(layout, reg, d)?;
            let c = self.cast(c, ScalarType::I64)?;
            let at = self.add(s, c)?;
            let at = self.cast(at, ScalarType::U64)?;
            let o = self.konst(cuprum_ir::Constant::u64(u64::from(o)));
            let inside = self.cmp(CmpOp::Lt, at, o)?;
            acc = self.and(acc, Some(inside))?;
        }
        Ok(acc)
    }

    /// Stores `value` at `place`, a tile of partitioned tensor `place.tensor` (its own tile,
    /// or a sub-tile `sub` of it, whose elements outside the own tile are dropped too).
    fn store_tile(&mut self, place: Placement, value: TileValue, sub: Option<SubTile>) -> R<()> {
        let tensor = place.tensor;
        let ty = self.elem(value)?;
        let anchor = self.plan.anchor(&place.shape);
        let layout = self
            .plan
            .id_of(&anchor)
            .ok_or_else(|| self.internal("a store's layout was not planned"))?;
        let regs = self.regs_in(value, layout)?;
        let mut w = self.access_width(layout, &place.shape, ty);
        // A sub-tile's runs start aligned only when the own tile's last size keeps them so.
        if let Some(sub) = &sub
            && sub.own.last().is_some_and(|&o| !o.is_multiple_of(w))
        {
            w = 1;
        }
        let inside = self.tile_inside(&place, false)?;
        let inside = match &sub {
            Some(sub) => {
                let own = self.sub_tile_inside(sub, &place.shape)?;
                self.and(inside, own)?
            }
            None => inside,
        };
        let aligned = self.runs_aligned(tensor, w)?;
        // A sub-tile whose shape divides the own tile's lies wholly inside the own tile or
        // wholly outside it, and its origin is a multiple of its shape.
        let sub_aligned = sub.as_ref().is_none_or(|sub| {
            sub.own
                .iter()
                .zip(&place.shape)
                .all(|(&o, &n)| n > 0 && o.is_multiple_of(n))
        });
        let whole = sub_aligned && self.tensor(tensor)?.facts.whole_tiles(&place.shape);
        let base = self.tensor(tensor)?.base;
        let n = regs.len();
        let primary = self.primary(layout);
        let fast_path = |e: &mut Self, w: u32| -> R<()> {
            e.if_some(primary, |e| {
                let strides = e.fast_strides(tensor, w)?;
                let thread = e.thread_index(&place, layout, &strides)?;
                for start in (0..n).step_by(w as usize) {
                    let run = &regs[start..start + w as usize];
                    let i = e.register_index(thread, layout, start, &strides)?;
                    // A run that may pass the tile's end is wholly in or out (runs divide the
                    // last axis); when out, its elements belong to other registers.
                    let valid = if (start..start + w as usize).all(|r| e.never_clamps(layout, r)) {
                        None
                    } else {
                        e.valid(layout, start)?
                    };
                    e.if_some(valid, |e| {
                        let addr = e.element_address(base, i, ty)?;
                        e.store_run(addr, run)
                    })?;
                }
                Ok(())
            })
        };
        let edge_path = |e: &mut Self| -> R<()> {
            let strides = e.tensor(tensor)?.strides.clone();
            for (r, &v) in regs.iter().enumerate() {
                let g = e.tensor_coords(&place, layout, r)?;
                let inside = e.in_tensor(tensor, &g)?;
                let valid = e.valid(layout, r)?;
                let owner = e.and(primary, valid)?;
                let write = e.and(owner, inside)?;
                let own = match &sub {
                    Some(sub) => e.in_own_tile(sub, layout, r)?,
                    None => None,
                };
                let write = e.and(write, own)?;
                e.if_some(write, |e| {
                    let i = e.tensor_index(tensor, &g, &strides)?;
                    let addr = e.element_address(base, i, ty)?;
                    e.push(Stmt::Store {
                        space: AddressSpace::Global,
                        addr,
                        value: v,
                    });
                    Ok(())
                })?;
            }
            Ok(())
        };
        if whole && aligned.is_none() {
            self.inside_or_outside(inside, w, &fast_path, |_| Ok(()))?;
        } else {
            self.inside_or_edge(inside, aligned, w, &fast_path, edge_path)?;
        }
        if self.barrier_after.get(tensor as usize) == Some(&true) {
            self.barrier();
        }
        Ok(())
    }

    /// Stores `values` (consecutive elements) at `addr`: one vector store, or one scalar
    /// store for a run of one.
    fn store_run(&mut self, addr: Value, values: &[Value]) -> R<()> {
        if values.len() == 1 {
            self.push(Stmt::Store {
                space: AddressSpace::Global,
                addr,
                value: values[0],
            });
            return Ok(());
        }
        let r = self
            .b
            .vector_store(AddressSpace::Global, addr, values.to_vec());
        self.built(r)
    }
}
