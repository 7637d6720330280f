//! One tile block's run: the kernel body over whole tiles, with the block's own copy of what
//! it stored to its tiles of the partitioned tensors ([`OwnTile`]), which the launch writes
//! to memory once the block has ended (see [`crate::run`]).

use std::rc::Rc;

use cuprum_ir::printf::{self, parse_format};
use cuprum_ir::scalar::{OpFault, cast_constant};
use cuprum_ir::{BinaryOp, Constant, ScalarType, TernaryOp};
use cuprum_tile_ir::{Block, Combine, Literal, MmaKind, Op, Stmt, TileKernel, TileValue, View};

use crate::elementwise;
use crate::error::InterpError;
use crate::kloop;
use crate::matmul;
use crate::memory::{AddressFault, TensorView, Window};
use crate::raw::{self, RawWrites};
use crate::shape;

/// A tile's elements, row-major, as register bits (immutable once defined, shared by the
/// values that only rename it: reshape, bitcast, loop arguments).
type Tile = Rc<Vec<u64>>;

/// A kernel parameter during a launch.
#[derive(Clone, Debug)]
pub(crate) enum Param<'a> {
    /// A scalar's bits.
    Scalar(u64),
    /// A tensor, and for a partitioned one its tile shape.
    Tensor {
        view: TensorView<'a>,
        tile: Option<Vec<usize>>,
    },
}

/// What every block of a launch shares.
pub(crate) struct Launch<'k, 'a> {
    pub kernel: &'k TileKernel,
    /// The element type of every value.
    pub elem: &'k [ScalarType],
    /// The shape of every value.
    pub shape: &'k [Vec<usize>],
    pub params: Vec<Param<'a>>,
    pub grid: [u32; 3],
    /// A number no other launch of the process has (what caches of the tensors' contents
    /// are keyed by).
    pub id: u64,
}

/// A block's view of its own tile of one partitioned tensor: the elements it stored.
#[derive(Clone, Debug)]
pub(crate) struct OwnTile {
    pub data: Vec<u64>,
    pub written: Vec<bool>,
}

/// What a block leaves when it ends: its stores, per partitioned tensor, and its prints.
#[derive(Debug)]
pub(crate) struct BlockOut {
    pub block: [u32; 3],
    pub own: Vec<(usize, OwnTile)>,
    /// Its scatters through raw pointers, in program order.
    pub raw: Vec<(u32, usize, u64)>,
    pub prints: Vec<String>,
}

/// How a block's run ended early.
enum Stop {
    /// A `Return`: the tile block ends normally.
    Return,
    /// The launch fails.
    Fail(Box<InterpError>),
}

/// How a nested block ended.
enum Flow {
    /// It ran to its end; its yields are defined.
    Next,
    /// A `Break` with its values.
    Break(Vec<Tile>),
    /// A `Continue` with its values.
    Continue(Vec<Tile>),
}

type Run<T> = Result<T, Stop>;

impl Launch<'_, '_> {
    /// Runs the body once as block `id`.
    pub fn block(&self, id: [u32; 3]) -> Result<BlockOut, InterpError> {
        let mut b = BlockRun {
            launch: self,
            id,
            env: vec![None; self.elem.len()],
            own: vec![None; self.params.len()],
            raw: RawWrites::default(),
            mapped: Vec::new(),
            prints: Vec::new(),
        };
        match b.block(&self.kernel.body) {
            Ok(_) | Err(Stop::Return) => {}
            Err(Stop::Fail(e)) => return Err(*e),
        }
        Ok(BlockOut {
            block: id,
            own: b
                .own
                .into_iter()
                .enumerate()
                .filter_map(|(p, o)| Some((p, o?)))
                .collect(),
            raw: b.raw.log,
            prints: b.prints,
        })
    }
}

/// The element bits of `literal` as an element of type `ty` (as specialization converts
/// it: Rust's `as` from `i64` or `f64`).
pub(crate) fn literal_bits(literal: Literal, ty: ScalarType) -> u64 {
    match literal {
        Literal::Exact(c) if c.ty == ty => c.bits,
        Literal::Exact(c) => cast_constant(c, ty).bits,
        Literal::Int(i) => cast_constant(Constant::i64(i), ty).bits,
        Literal::Float(x) => cast_constant(Constant::f64(x), ty).bits,
        Literal::Bool(b) => cast_constant(Constant::bool(b), ty).bits,
    }
}

/// The integer value of the register bits of an integer (or `Bool`) of type `ty`.
pub(crate) fn int_value(bits: u64, ty: ScalarType) -> i128 {
    if ty.is_signed_int() {
        let shift = 64 - ty.bits();
        i128::from(((bits << shift) as i64) >> shift)
    } else {
        i128::from(bits)
    }
}

/// The tile coordinate where tile `index` (per axis) of shape `tile` starts.
fn tile_base(index: impl IntoIterator<Item = i128>, tile: &[usize]) -> Vec<i128> {
    index
        .into_iter()
        .zip(tile)
        .map(|(i, &t)| i * t as i128)
        .collect()
}

/// The tile of partitioned tensor `tile` that block `id` owns starts here.
pub(crate) fn own_base(id: [u32; 3], tile: &[usize]) -> Vec<i128> {
    tile_base(id.iter().map(|&i| i128::from(i)), tile)
}

struct BlockRun<'l, 'k, 'a> {
    launch: &'l Launch<'k, 'a>,
    id: [u32; 3],
    /// Every value's tile once defined.
    env: Vec<Option<Tile>>,
    /// Per parameter: what this block stored to its tile of a partitioned tensor.
    own: Vec<Option<OwnTile>>,
    /// What this block scattered through raw pointers and stored to mapped outputs.
    raw: RawWrites,
    /// The current tile of each enclosing loop over a mapped output's tiles, innermost
    /// last: the tensor and the tile's coordinates.
    mapped: Vec<(u32, Vec<u64>)>,
    prints: Vec<String>,
}

impl<'l, 'k, 'a> BlockRun<'l, 'k, 'a> {
    fn fail(&self, e: InterpError) -> Stop {
        Stop::Fail(Box::new(e))
    }

    fn unsupported(&self, message: String) -> Stop {
        self.fail(InterpError::Unsupported {
            kernel: self.launch.kernel.name.clone(),
            block: self.id,
            message,
        })
    }

    fn op_fault(&self, f: OpFault, what: impl FnOnce() -> String) -> Stop {
        let (kernel, block) = (self.launch.kernel.name.clone(), self.id);
        match f {
            OpFault::DivideByZero { .. } => self.fail(InterpError::DivideByZero { kernel, block }),
            OpFault::DivideOverflow { .. } => {
                self.fail(InterpError::DivideOverflow { kernel, block })
            }
            OpFault::Unsupported => {
                self.unsupported(format!("{} is not defined by the kernel IR", what()))
            }
        }
    }

    fn address_fault(&self, tensor: &TensorView<'_>, f: AddressFault) -> Stop {
        self.fail(InterpError::OutOfAllocation {
            kernel: self.launch.kernel.name.clone(),
            block: self.id,
            param: tensor.name.to_string(),
            coord: f.coord,
            address: f.address,
            elements: tensor.elements(),
        })
    }

    fn get(&self, v: TileValue) -> Run<Tile> {
        match self.env.get(v.index()) {
            Some(Some(t)) => Ok(Rc::clone(t)),
            _ => Err(self.unsupported(format!("{v:?} is used before its definition"))),
        }
    }

    fn get_all(&self, vs: &[TileValue]) -> Run<Vec<Tile>> {
        vs.iter().map(|&v| self.get(v)).collect()
    }

    /// The one element of rank-0 `v`.
    fn scalar(&self, v: TileValue) -> Run<u64> {
        Ok(self.get(v)?.first().copied().unwrap_or(0))
    }

    fn set(&mut self, v: TileValue, t: Tile) {
        if let Some(slot) = self.env.get_mut(v.index()) {
            *slot = Some(t);
        }
    }

    fn set_all(&mut self, vs: &[TileValue], ts: Vec<Tile>) {
        for (&v, t) in vs.iter().zip(ts) {
            self.set(v, t);
        }
    }

    fn elem(&self, v: TileValue) -> ScalarType {
        self.launch.elem[v.index()]
    }

    fn shape(&self, v: TileValue) -> &'k [usize] {
        &self.launch.shape[v.index()]
    }

    fn tensor(&self, p: u32) -> Run<(TensorView<'a>, Option<&'l [usize]>)> {
        let l: &'l Launch<'k, 'a> = self.launch;
        match l.params.get(p as usize) {
            Some(Param::Tensor { view, tile }) => Ok((*view, tile.as_deref())),
            _ => Err(self.unsupported(format!("parameter {p} is not a tensor"))),
        }
    }

    fn block(&mut self, block: &Block) -> Run<Flow> {
        for s in &block.stmts {
            match self.stmt(s)? {
                Flow::Next => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Next)
    }

    fn stmt(&mut self, s: &Stmt) -> Run<Flow> {
        match s {
            Stmt::Def { value, op } => {
                let t = self.op(*value, op)?;
                self.set(*value, t);
            }
            Stmt::Store { tensor, value } => self.store(*tensor, *value)?,
            Stmt::StorePart {
                tensor,
                tile,
                index,
                value,
            } => self.store_part(*tensor, tile, index, *value)?,
            Stmt::Scatter {
                tensor,
                offsets,
                value,
                mask,
            } => self.scatter(*tensor, *offsets, *value, *mask)?,
            Stmt::If {
                cond,
                then,
                otherwise,
                results,
            } => {
                let branch = if self.scalar(*cond)? != 0 {
                    then
                } else {
                    otherwise
                };
                match self.block(branch)? {
                    Flow::Next => {
                        let ys = self.get_all(&branch.yields)?;
                        self.set_all(results, ys);
                    }
                    other => return Ok(other),
                }
            }
            Stmt::For {
                counter,
                start,
                end,
                step,
                args,
                inits,
                body,
                results,
            } => {
                let ty = self.elem(*start);
                let [first, end, step] =
                    [*start, *end, *step].map(|v| self.scalar(v).map(|b| int_value(b, ty)));
                let (mut c, end, step) = (first?, end?, step?);
                if step <= 0 {
                    return Err(self.fail(InterpError::ForStep {
                        kernel: self.launch.kernel.name.clone(),
                        block: self.id,
                        step: step as i64,
                    }));
                }
                if step == 1
                    && let Some(k) = kloop::recognize(*counter, args, body, self.launch.elem)
                    && let Some(out) = self.k_loop(&k, (c, end), inits)?
                {
                    self.set_all(results, vec![Rc::new(out)]);
                    return Ok(Flow::Next);
                }
                let mut carried = self.get_all(inits)?;
                // The counter runs in `i128`: it stops at `end` instead of wrapping.
                let out = loop {
                    if c >= end {
                        break carried;
                    }
                    self.set(*counter, Rc::new(vec![Constant::new(ty, c as u64).bits]));
                    self.set_all(args, carried);
                    carried = match self.block(body)? {
                        Flow::Next => self.get_all(&body.yields)?,
                        Flow::Continue(v) => v,
                        Flow::Break(v) => break v,
                    };
                    c += step;
                };
                self.set_all(results, out);
            }
            Stmt::Loop {
                args,
                inits,
                body,
                results,
            } => {
                let mut carried = self.get_all(inits)?;
                let out = loop {
                    self.set_all(args, carried);
                    carried = match self.block(body)? {
                        Flow::Next => self.get_all(&body.yields)?,
                        Flow::Continue(v) => v,
                        Flow::Break(v) => break v,
                    };
                };
                self.set_all(results, out);
            }
            Stmt::ForTiles {
                tensor,
                map,
                coords,
                args,
                inits,
                body,
                results,
            } => {
                let (t, _) = self.tensor(*tensor)?;
                let tile = self.mapped_tile_shape(*tensor)?;
                let tiles: Vec<u64> = t
                    .shape
                    .iter()
                    .zip(&tile)
                    .map(|(&n, &d)| n.div_ceil(d as u64))
                    .collect();
                let total: u64 = tiles.iter().product();
                let map: Vec<u64> = map
                    .iter()
                    .map(|d| u64::from(d.known().unwrap_or(1)))
                    .collect();
                let step = u64::from(self.launch.grid[0].max(1));
                let mut next = u64::from(self.id[0]);
                let mut carried = self.get_all(inits)?;
                let out = loop {
                    if next >= total {
                        break carried;
                    }
                    let at = cuprum_tile_ir::grid::mapped_tile(next, &tiles, &map);
                    for (&c, &v) in coords.iter().zip(&at) {
                        self.set(c, Rc::new(vec![Constant::i32(v as i32).bits]));
                    }
                    self.set_all(args, carried);
                    self.mapped.push((*tensor, at));
                    let flow = self.block(body);
                    self.mapped.pop();
                    carried = match flow? {
                        Flow::Next => self.get_all(&body.yields)?,
                        Flow::Continue(v) => v,
                        Flow::Break(v) => break v,
                    };
                    next += step;
                };
                self.set_all(results, out);
            }
            Stmt::StoreMapped { tensor, value } => self.store_mapped(*tensor, *value)?,
            Stmt::Break { values } => return Ok(Flow::Break(self.get_all(values)?)),
            Stmt::Continue { values } => return Ok(Flow::Continue(self.get_all(values)?)),
            Stmt::Return => return Err(Stop::Return),
            Stmt::Print { format, args } => {
                let pieces = parse_format(format).map_err(|e| self.unsupported(e))?;
                let values = args
                    .iter()
                    .map(|&a| Ok(printf::Arg::promote(self.elem(a), self.scalar(a)?)))
                    .collect::<Run<Vec<_>>>()?;
                self.prints.push(printf::format(&pieces, &values));
            }
            Stmt::Assert { cond, message } => {
                if self.scalar(*cond)? == 0 {
                    return Err(self.fail(InterpError::AssertFailed {
                        kernel: self.launch.kernel.name.clone(),
                        block: self.id,
                        message: message.clone(),
                    }));
                }
            }
            // Line information does nothing.
            Stmt::SourceLine { .. } => {}
        }
        Ok(Flow::Next)
    }

    /// A GEMM's K loop over counters `range` from `inits` computed at once (`kloop`), or
    /// `None` when it must run step by step.
    fn k_loop(
        &self,
        k: &kloop::KLoop,
        range: (i128, i128),
        inits: &[TileValue],
    ) -> Run<Option<Vec<u64>>> {
        let (a, _) = self.tensor(k.a)?;
        let (b, _) = self.tensor(k.b)?;
        let row = int_value(self.scalar(k.a_row)?, self.elem(k.a_row));
        let col = int_value(self.scalar(k.b_col)?, self.elem(k.b_col));
        let [init] = inits else { return Ok(None) };
        let acc = self.get(*init)?;
        Ok(k.run(self.launch.id, &a, &b, (row, col), range, &acc))
    }

    /// Writes `value` to this block's copy of its tile of partitioned tensor `p`: the
    /// elements inside the tensor (the others are dropped).
    fn store(&mut self, p: u32, value: TileValue) -> Run<()> {
        let (t, tile) = self.tensor(p)?;
        let Some(tile) = tile else {
            return Err(self.unsupported(format!("a store to parameter {p}, not partitioned")));
        };
        let window = Window::new(&t, &own_base(self.id, tile), tile)
            .map_err(|f| self.address_fault(&t, f))?;
        let v = self.get(value)?;
        let n = v.len();
        let own = self.own[p as usize].get_or_insert_with(|| OwnTile {
            data: vec![0; n],
            written: vec![false; n],
        });
        if let Some(w) = window {
            w.for_each(|i, _| {
                own.data[i] = v[i];
                own.written[i] = true;
            });
        }
        Ok(())
    }

    /// Writes `value` to sub-tile `index` (of shape `sub`) of this block's copy of its tile
    /// of partitioned tensor `p`: the elements inside both the own tile and the tensor (the
    /// others are dropped).
    fn store_part(
        &mut self,
        p: u32,
        sub: &[cuprum_tile_ir::Dim],
        index: &[TileValue],
        value: TileValue,
    ) -> Run<()> {
        let (t, tile) = self.tensor(p)?;
        let Some(tile) = tile else {
            return Err(self.unsupported(format!("a store to parameter {p}, not partitioned")));
        };
        let window = Window::new(&t, &own_base(self.id, tile), tile)
            .map_err(|f| self.address_fault(&t, f))?;
        let n: usize = tile.iter().product();
        let mut inside = vec![false; n];
        if let Some(w) = window {
            w.for_each(|i, _| inside[i] = true);
        }
        let sub: Vec<usize> = sub
            .iter()
            .map(|d| d.known().unwrap_or(1) as usize)
            .collect();
        let index = index
            .iter()
            .map(|&i| Ok(int_value(self.scalar(i)?, self.elem(i))))
            .collect::<Run<Vec<i128>>>()?;
        let base = tile_base(index, &sub);
        let v = self.get(value)?;
        let own = self.own[p as usize].get_or_insert_with(|| OwnTile {
            data: vec![0; n],
            written: vec![false; n],
        });
        let mut coord = vec![0usize; sub.len()];
        for &bits in v.iter() {
            // The own-tile element of sub-tile coordinate `coord`, if inside the own tile.
            let mut flat = Some(0usize);
            for ((&c, &b), &t) in coord.iter().zip(&base).zip(tile) {
                let o = b + c as i128;
                flat = flat
                    .filter(|_| o >= 0 && o < t as i128)
                    .map(|f| f * t + o as usize);
            }
            if let Some(f) = flat.filter(|&f| inside[f]) {
                own.data[f] = bits;
                own.written[f] = true;
            }
            // The next coordinate, row-major.
            for d in (0..coord.len()).rev() {
                coord[d] += 1;
                if coord[d] < sub[d] {
                    break;
                }
                coord[d] = 0;
            }
        }
        Ok(())
    }

    /// The element addresses of `offsets` through raw pointer `p` (`None` where `mask` is
    /// false or the offset is outside the pointer's elements), and the pointer's view.
    fn raw_addresses(
        &self,
        p: u32,
        offsets: TileValue,
        mask: Option<TileValue>,
    ) -> Run<(TensorView<'a>, Vec<Option<usize>>)> {
        let (t, _) = self.tensor(p)?;
        let ty = self.elem(offsets);
        if !raw::is_offset_type(ty) {
            return Err(self.unsupported(format!("offsets of type {ty}")));
        }
        let offs = self.get(offsets)?;
        let mask = mask.map(|m| self.get(m)).transpose()?;
        let mut out = Vec::with_capacity(offs.len());
        for (i, &bits) in offs.iter().enumerate() {
            if mask.as_ref().is_some_and(|m| m.get(i) == Some(&0)) {
                out.push(None);
                continue;
            }
            let a = raw::element_address(&t, int_value(bits, ty))
                .map_err(|f| self.address_fault(&t, f))?;
            out.push(a);
        }
        Ok((t, out))
    }

    /// The tile shape of mapped output `p`.
    fn mapped_tile_shape(&self, p: u32) -> Run<Vec<usize>> {
        match self.launch.kernel.params.get(p as usize).map(|p| &p.kind) {
            Some(cuprum_tile_ir::ParamKind::Tensor(t)) => match t.mapped_tile() {
                Some(tile) => Ok(tile
                    .iter()
                    .map(|d| d.known().unwrap_or(1) as usize)
                    .collect()),
                None => Err(self.unsupported(format!("parameter {p} is not a mapped output"))),
            },
            _ => Err(self.unsupported(format!("parameter {p} is not a tensor"))),
        }
    }

    /// `Stmt::StoreMapped`: the elements of the current tile inside the tensor, into this
    /// block's log.
    fn store_mapped(&mut self, p: u32, value: TileValue) -> Run<()> {
        let (t, _) = self.tensor(p)?;
        let tile = self.mapped_tile_shape(p)?;
        let Some((_, at)) = self.mapped.iter().rev().find(|(q, _)| *q == p) else {
            return Err(self.unsupported(format!(
                "a mapped store to parameter {p} outside a loop over its tiles"
            )));
        };
        let base = tile_base(at.iter().map(|&c| i128::from(c)), &tile);
        let window = Window::new(&t, &base, &tile).map_err(|f| self.address_fault(&t, f))?;
        let v = self.get(value)?;
        if let Some(w) = window {
            let raw = &mut self.raw;
            w.for_each(|i, addr| raw.write(p, addr, v[i]));
        }
        Ok(())
    }

    /// `Op::Gather`.
    fn gather(
        &self,
        p: u32,
        offsets: TileValue,
        mask: Option<TileValue>,
        padding: Literal,
    ) -> Run<Tile> {
        let (t, addrs) = self.raw_addresses(p, offsets, mask)?;
        let pad = literal_bits(padding, t.elem);
        Ok(Rc::new(
            addrs
                .into_iter()
                .map(|a| a.map_or(pad, |a| self.raw.read(p, &t, a)))
                .collect(),
        ))
    }

    /// `Stmt::Scatter`: into this block's log, element by element in row-major order.
    fn scatter(
        &mut self,
        p: u32,
        offsets: TileValue,
        value: TileValue,
        mask: Option<TileValue>,
    ) -> Run<()> {
        let (_, addrs) = self.raw_addresses(p, offsets, mask)?;
        let v = self.get(value)?;
        for (a, &bits) in addrs.into_iter().zip(v.iter()) {
            if let Some(a) = a {
                self.raw.write(p, a, bits);
            }
        }
        Ok(())
    }

    fn load(&self, view: &View, padding: Literal) -> Run<Tile> {
        let p = view.tensor();
        let (t, part) = self.tensor(p)?;
        // A permuted view reads the tensor with its axes in the view's order.
        let (shape, strides): (Vec<u64>, Vec<i64>);
        let t = match view {
            View::Permuted { dim_map, .. } => {
                let axes = dim_map
                    .iter()
                    .map(|a| a.known().map(|a| a as usize))
                    .collect::<Option<Vec<usize>>>()
                    .ok_or_else(|| {
                        self.unsupported("a permuted load with an unknown axis".into())
                    })?;
                let permuted = |a: usize| Some((*t.shape.get(a)?, *t.strides.get(a)?));
                (shape, strides) = axes
                    .iter()
                    .map(|&a| permuted(a))
                    .collect::<Option<Vec<(u64, i64)>>>()
                    .ok_or_else(|| {
                        self.unsupported("a permuted load with an axis out of range".into())
                    })?
                    .into_iter()
                    .unzip();
                TensorView {
                    shape: &shape,
                    strides: &strides,
                    ..t
                }
            }
            View::Own { .. } | View::Tiled { .. } => t,
        };
        let (base, tile): (Vec<i128>, Vec<usize>) = match view {
            View::Own { .. } => {
                let Some(tile) = part else {
                    return Err(self.unsupported(format!("parameter {p} is not partitioned")));
                };
                (own_base(self.id, tile), tile.to_vec())
            }
            View::Tiled { tile, index, .. } | View::Permuted { tile, index, .. } => {
                let index = index
                    .iter()
                    .map(|&i| Ok(int_value(self.scalar(i)?, self.elem(i))))
                    .collect::<Run<Vec<i128>>>()?;
                let tile: Vec<usize> = tile
                    .iter()
                    .map(|d| d.known().unwrap_or(1) as usize)
                    .collect();
                (tile_base(index, &tile), tile)
            }
        };
        let n: usize = tile.iter().product();
        let mut out = vec![literal_bits(padding, t.elem); n];
        let window = Window::new(&t, &base, &tile).map_err(|f| self.address_fault(&t, f))?;
        if let Some(w) = window {
            match (view, &self.own[p as usize]) {
                (View::Own { .. }, Some(own)) => w.for_each(|i, a| {
                    out[i] = if own.written[i] {
                        own.data[i]
                    } else {
                        t.read(a)
                    };
                }),
                _ => w.for_each(|i, a| out[i] = t.read(a)),
            }
        }
        Ok(Rc::new(out))
    }

    fn op(&mut self, value: TileValue, op: &Op) -> Run<Tile> {
        let ty = self.elem(value);
        let n: usize = self.shape(value).iter().product();
        let l = self.launch;
        let out = match op {
            Op::Const { value: lit, .. } => vec![literal_bits(*lit, ty); n],
            Op::ConstParam(i) => {
                return Err(
                    self.unsupported(format!("const parameter {i} in a specialized kernel"))
                );
            }
            Op::Param(i) => match l.params.get(*i as usize) {
                Some(Param::Scalar(bits)) => vec![*bits],
                _ => return Err(self.unsupported(format!("parameter {i} is not a scalar"))),
            },
            Op::BlockId(a) => vec![Constant::i32(self.id[*a as usize % 3] as i32).bits],
            Op::NumBlocks(a) => vec![Constant::i32(l.grid[*a as usize % 3] as i32).bits],
            Op::TensorDim { tensor, axis } => {
                let (t, _) = self.tensor(*tensor)?;
                let size = t.shape.get(*axis as usize).copied().unwrap_or(0);
                vec![Constant::i64(size as i64).bits]
            }
            Op::Iota { axis, .. } => elementwise::cast(
                ScalarType::U64,
                ty,
                &shape::iota(self.shape(value), *axis as usize),
            ),
            Op::Unary(u, a) => {
                let at = self.elem(*a);
                elementwise::unary(*u, at, &self.get(*a)?)
                    .map_err(|f| self.op_fault(f, || format!("{u:?} of {at}")))?
            }
            Op::Binary(b, x, y) => {
                let xt = self.elem(*x);
                elementwise::binary(*b, xt, &self.get(*x)?, &self.get(*y)?)
                    .map_err(|f| self.op_fault(f, || format!("{b:?} of {xt}")))?
            }
            Op::Ternary(TernaryOp::MulAdd, a, b, c) => {
                let at = self.elem(*a);
                elementwise::mul_add(at, &self.get(*a)?, &self.get(*b)?, &self.get(*c)?)
                    .map_err(|f| self.op_fault(f, || format!("MulAdd of {at}")))?
            }
            Op::Mma { a, b, acc } => {
                let (input, accum) = (self.elem(*a), self.elem(*acc));
                let kind = MmaKind::of(input, accum).ok_or_else(|| {
                    self.unsupported(format!("mma of {input} inputs into {accum}"))
                })?;
                let dims = matmul::MmaDims::of(self.shape(*a), self.shape(*b));
                matmul::mma(kind, dims, &self.get(*a)?, &self.get(*b)?, &self.get(*acc)?)
                    .map_err(|f| self.op_fault(f, || format!("mma of {input}")))?
            }
            Op::Compare(c, x, y) => {
                elementwise::compare(*c, self.elem(*x), &self.get(*x)?, &self.get(*y)?)
            }
            Op::Select {
                cond,
                if_true,
                if_false,
            } => elementwise::select(
                &self.get(*cond)?,
                &self.get(*if_true)?,
                &self.get(*if_false)?,
            ),
            Op::Cast { value: v, .. } => elementwise::cast(self.elem(*v), ty, &self.get(*v)?),
            // Same size, so the zero-extended bits are the same bits.
            Op::Bitcast { value: v, .. } | Op::Reshape { value: v, .. } => return self.get(*v),
            Op::Broadcast { value: v, .. } => {
                shape::broadcast(&self.get(*v)?, self.shape(*v), self.shape(value))
            }
            Op::Permute { value: v, perm } => shape::permute(&self.get(*v)?, self.shape(*v), perm),
            Op::Reduce {
                value: v,
                axis,
                combine,
            } => self.reduce(*v, *axis as usize, combine)?,
            Op::Load { view, padding } => return self.load(view, *padding),
            Op::Gather {
                tensor,
                offsets,
                mask,
                padding,
            } => return self.gather(*tensor, *offsets, *mask, *padding),
        };
        Ok(Rc::new(out))
    }

    /// Reduces `v` along `axis`: each result element combines its elements left to right
    /// along the axis, `((x0 ⊕ x1) ⊕ x2) ⊕ ...`, starting from `x0` (the identity of a
    /// closure is not used: the axis is never empty).
    fn reduce(&mut self, v: TileValue, axis: usize, combine: &Combine) -> Run<Vec<u64>> {
        let ty = self.elem(v);
        let (rows, n, m) = shape::reduction_rows(&self.get(v)?, self.shape(v), axis);
        let op = match combine {
            Combine::Sum => BinaryOp::Add,
            Combine::Prod => BinaryOp::Mul,
            Combine::Min => BinaryOp::Min,
            Combine::Max => BinaryOp::Max,
            Combine::Closure { a, b, body, .. } => {
                let mut out = Vec::with_capacity(m);
                for k in 0..m {
                    let mut acc = rows[k];
                    for j in 1..n {
                        self.set(*a, Rc::new(vec![acc]));
                        self.set(*b, Rc::new(vec![rows[j * m + k]]));
                        match self.block(body)? {
                            Flow::Next => {}
                            _ => {
                                return Err(self.unsupported(
                                    "a break or continue leaves a reduce closure".into(),
                                ));
                            }
                        }
                        acc = body.yields.first().map_or(Ok(0), |&y| self.scalar(y))?;
                    }
                    out.push(acc);
                }
                return Ok(out);
            }
        };
        let mut acc = rows[..m].to_vec();
        for j in 1..n {
            elementwise::binary_assign(op, ty, &mut acc, &rows[j * m..(j + 1) * m])
                .map_err(|f| self.op_fault(f, || format!("{op:?} of {ty}")))?;
        }
        Ok(acc)
    }
}
