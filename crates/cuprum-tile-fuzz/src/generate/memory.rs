//! Parameters and memory: the outputs, read-only inputs made for the loads that need them
//! (shaped so that their tiles fall inside, on the edge and outside), scalar parameters,
//! loads (direct, permuted, flattened, broadcast along an axis, of a rank-0 tensor, of a
//! block's own tile) and stores; gathers through raw pointers that nothing writes, at
//! offsets from data (many before or past the pointer's elements, which read the padding),
//! and scatters, each to a raw pointer of its own, every block to its own places.

use cuprum_ir::{BinaryOp, ScalarType};
use cuprum_tile_ir::{
    Dim, Elem, Literal, Op, ParamKind, Stmt, TensorAccess, TensorDim, TensorParam, TileValue, View,
    shape_of,
};
use rand::Rng;

use super::{Gen, R};
use crate::ArgData;
use crate::tensor::{ViewKind, random_element, random_tensor};

use ScalarType as S;

/// The most read-only tensors a program gets (later loads reuse them).
const MAX_INPUTS: usize = 5;
/// The most raw pointers a program gets (gathers reuse their sources).
const MAX_RAW: usize = 4;

impl Gen<'_> {
    /// Declares partitioned output `name` (tiles of `tile`) with a poisoned tensor of
    /// `shape`.
    pub(super) fn output_param(
        &mut self,
        name: &str,
        elem: ScalarType,
        tile: &[u32],
        shape: &[u64],
        kind: ViewKind,
    ) -> u32 {
        self.cb.output(&mut self.rng, name, elem, tile, shape, kind)
    }

    /// Output `o`'s element type and tile shape.
    pub(crate) fn output_of(&self, o: u32) -> R<(ScalarType, Vec<u32>)> {
        let kernel = self.cb.b.kernel();
        let tile = match kernel.params.get(o as usize).map(|p| &p.kind) {
            Some(ParamKind::Tensor(t)) => t
                .partition_tile()
                .and_then(|s| cuprum_tile_ir::known_sizes(&s)),
            _ => None,
        };
        match (self.cb.tensor_elem(o), tile) {
            (Some(e), Some(t)) => Ok((e, t)),
            _ => Err(self.error(format!("parameter {o} is not a partitioned output"))),
        }
    }

    /// The indices of the tensor parameters declared so far that `keep` accepts (with
    /// their names).
    fn tensor_params(&self, keep: impl Fn(&str, &TensorParam) -> bool) -> Vec<u32> {
        self.cb
            .b
            .kernel()
            .params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match &p.kind {
                ParamKind::Tensor(t) if keep(&p.name, t) => Some(i as u32),
                _ => None,
            })
            .collect()
    }

    /// The read-only inputs of `elem` and `rank` declared so far.
    fn inputs_of(&self, elem: ScalarType, rank: usize) -> Vec<u32> {
        self.tensor_params(|_, t| {
            t.access == TensorAccess::Read && t.elem == Elem::Known(elem) && t.rank() == rank
        })
    }

    fn input_count(&self) -> usize {
        self.cb
            .b
            .kernel()
            .params
            .iter()
            .filter(|p| matches!(&p.kind, ParamKind::Tensor(t) if t.access == TensorAccess::Read))
            .count()
    }

    /// A read-only input of `elem` whose tiles of `tile` are read at block indices up to
    /// `blocks` along each axis: an existing one now and then, else a new one whose size
    /// along each axis is about `blocks * tile`, give or take part of a tile (so the last
    /// tiles are ragged, whole, or wholly outside).
    fn input_for(&mut self, elem: ScalarType, tile: &[u32], blocks: &[u32]) -> u32 {
        let existing = self.inputs_of(elem, tile.len());
        if !existing.is_empty() && (self.input_count() >= MAX_INPUTS || self.chance(0.35)) {
            return self.choose(&existing);
        }
        let shape: Vec<u64> = tile
            .iter()
            .zip(blocks)
            .map(|(&t, &g)| {
                let (t, g) = (i64::from(t), i64::from(g));
                let n = g * t + self.rng.random_range(-t..=t / 2);
                n.max(1) as u64
            })
            .collect();
        // Now and then no element at all along an axis: every tile is padding.
        let mut shape = shape;
        if !shape.is_empty() && self.chance(0.03) {
            let axis = self.below(shape.len());
            shape[axis] = 0;
        }
        // A declared static size now and then (the kernel then uses the constant).
        let dims = shape
            .iter()
            .map(|&n| {
                if n > 0 && self.chance(0.15) {
                    TensorDim::Static(Dim::Known(n as u32))
                } else {
                    TensorDim::Dynamic
                }
            })
            .collect();
        let name = format!("in{}", self.input_count());
        let kind = if self.chance(0.4) {
            ViewKind::Contiguous
        } else {
            ViewKind::Any
        };
        let t = random_tensor(&mut self.rng, elem, &shape, kind);
        self.cb.input_tensor(&name, t, Some(dims))
    }

    /// A new scalar parameter of `elem`, with a random value; returns its rank-0 value.
    pub(crate) fn scalar_param(&mut self, elem: ScalarType) -> R<TileValue> {
        let name = format!("s{}", self.cb.args.len());
        let c = random_element(&mut self.rng, elem);
        let v = self.cb.scalar(&name, c)?;
        self.expose(v);
        Ok(v)
    }

    /// A random padding value for loads of `elem`.
    fn padding(&mut self, elem: ScalarType) -> Literal {
        if elem == S::Bool {
            return Literal::Bool(self.chance(0.5));
        }
        match self.below(6) {
            0 => Literal::Exact(random_element(&mut self.rng, elem)),
            1 if elem.is_float() => Literal::Float(self.choose(&[
                f64::NEG_INFINITY,
                f64::INFINITY,
                -0.0,
                f64::NAN,
                0.5,
            ])),
            _ => Literal::Int(self.rng.random_range(-3..=3)),
        }
    }

    /// The index of a tile along grid axis `axis` for a load: mostly the block's own index,
    /// now and then one off (the tile next to it, maybe outside the tensor), a constant, a
    /// loop counter, in one of several integer types.
    fn tile_index(&mut self, axis: usize) -> R<TileValue> {
        let counter = self.pick_where(|t| {
            t.is_scalar()
                && t.elem.known().is_some_and(|e| e.is_int())
                && t.elem != Elem::Known(S::U64)
        });
        let base = match self.below(40) {
            0..=3 => {
                let ty = self.int_elem();
                let v = self.rng.random_range(0..=2);
                self.konst(ty, Literal::Int(v), &[])?
            }
            4 => {
                // So far out that `index * tile` does not fit in 64 bits.
                let (ty, bits) = self.choose(&[
                    (S::I64, 1u64 << 62),
                    (S::I64, 1 << 63),
                    (S::U64, (1 << 63) + 3),
                    (S::I64, (1 << 62) + (1 << 61)),
                ]);
                return self.konst(ty, Literal::Exact(cuprum_ir::Constant::new(ty, bits)), &[]);
            }
            5..=7 if counter.is_some() => match counter {
                Some(c) => {
                    // A counter or other integer scalar, kept small.
                    let ty = self.elem_of(c);
                    self.clamp_int(c, ty, 0, 3)?
                }
                None => self.def(Op::BlockId(axis as u32))?,
            },
            _ => self.def(Op::BlockId(axis as u32))?,
        };
        let v = if self.chance(0.12) {
            let ty = self.elem_of(base);
            let delta = self.choose(&[-1i64, 1]);
            let d = if ty.is_unsigned_int() && delta < 0 {
                self.konst(ty, Literal::Int(1), &[])?
            } else {
                self.konst(ty, Literal::Int(delta), &[])?
            };
            self.def(Op::Binary(BinaryOp::Add, base, d))?
        } else {
            base
        };
        if self.chance(0.25) {
            let to = self.choose(&[S::I64, S::U32, S::I16, S::U64, S::I8]);
            return self.def(Op::Cast {
                value: v,
                to: Elem::Known(to),
            });
        }
        Ok(v)
    }

    /// A tile of `elem` and `shape` loaded from memory (see the module docs).
    pub(crate) fn load(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        let rank = shape.len();
        let own = self.outputs.iter().copied().find(|&o| {
            self.output_of(o)
                .is_ok_and(|(e, tile)| e == elem && tile.as_slice() == shape)
        });
        if let Some(o) = own
            && self.chance(0.2)
        {
            let padding = self.padding(elem);
            return self.def(Op::Load {
                view: View::Own { tensor: o },
                padding,
            });
        }
        let blocks_of = |g: &Self, axes: &[usize]| -> Vec<u32> {
            axes.iter()
                .map(|&a| g.grid.get(a).copied().unwrap_or(1))
                .collect()
        };
        match self.below(10) {
            // Gathered through a raw pointer.
            4 if self.raw_count() < MAX_RAW || !self.raw_sources(elem).is_empty() => {
                self.gather(elem, shape)
            }
            // Permuted: the tile with its axes reordered, then permuted back.
            0..=1 if rank >= 2 => {
                let perm = self.permutation(rank);
                let tile: Vec<u32> = perm.iter().map(|&p| shape[p]).collect();
                let axes: Vec<usize> = perm.clone();
                let blocks = blocks_of(self, &axes);
                let t = self.tiled_load(elem, &tile, &axes, &blocks)?;
                let mut back = vec![0u32; rank];
                for (i, &p) in perm.iter().enumerate() {
                    back[p] = i as u32;
                }
                self.def(Op::Permute {
                    value: t,
                    perm: back,
                })
            }
            // Flattened: one rank-1 tile per block, reshaped.
            2 if rank >= 2 => {
                let n: u32 = shape.iter().product();
                let total: u32 = self.grid.iter().product();
                let p = self.input_for(elem, &[n], &[total]);
                let index = self.linear_block_index()?;
                let padding = self.padding(elem);
                let t = self.def_hidden(Op::Load {
                    view: View::Tiled {
                        tensor: p,
                        tile: shape_of(&[n]),
                        index: vec![index],
                    },
                    padding,
                })?;
                self.def(Op::Reshape {
                    value: t,
                    shape: shape_of(shape),
                })
            }
            // Broadcast: a row or column (one axis of size 1), repeated.
            3 if rank >= 1 && shape.iter().any(|&n| n > 1) => {
                let axis = self.below(rank);
                let mut tile = shape.to_vec();
                tile[axis] = 1;
                let axes: Vec<usize> = (0..rank).collect();
                let blocks = blocks_of(self, &axes);
                let t = self.tiled_load(elem, &tile, &axes, &blocks)?;
                self.def(Op::Broadcast {
                    value: t,
                    shape: shape_of(shape),
                })
            }
            _ => {
                let axes: Vec<usize> = (0..rank).collect();
                let blocks = blocks_of(self, &axes);
                self.tiled_load(elem, shape, &axes, &blocks)
            }
        }
    }

    /// A load of `tile` from an input, tile index along tile axis `i` from grid axis
    /// `axes[i]`.
    fn tiled_load(
        &mut self,
        elem: ScalarType,
        tile: &[u32],
        axes: &[usize],
        blocks: &[u32],
    ) -> R<TileValue> {
        let p = self.input_for(elem, tile, blocks);
        let index = axes
            .iter()
            .map(|&a| self.tile_index(a))
            .collect::<R<Vec<_>>>()?;
        let padding = self.padding(elem);
        self.def_hidden(Op::Load {
            view: View::Tiled {
                tensor: p,
                tile: shape_of(tile),
                index,
            },
            padding,
        })
    }

    /// The raw pointers declared so far.
    fn raw_count(&self) -> usize {
        self.tensor_params(|_, t| t.access == TensorAccess::Raw)
            .len()
    }

    /// The raw pointers of `elem` that gathers read (`src*`; nothing writes them).
    fn raw_sources(&self, elem: ScalarType) -> Vec<u32> {
        self.tensor_params(|name, t| {
            t.access == TensorAccess::Raw && t.elem == Elem::Known(elem) && name.starts_with("src")
        })
    }

    /// A tile of `elem` and `shape` gathered through a raw pointer nobody writes, at offsets
    /// from data (some outside the pointer's elements), under a random mask now and then.
    fn gather(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        let sources = self.raw_sources(elem);
        let src = if !sources.is_empty() && (self.raw_count() >= MAX_RAW || self.chance(0.5)) {
            self.choose(&sources)
        } else {
            let len = self.rng.random_range(1..160u64);
            let offset = self.rng.random_range(0..4u64);
            let name = format!("src{}", self.cb.args.len());
            self.cb
                .raw_pointer(&mut self.rng, &name, elem, offset + len, offset, None)
        };
        let len = match self.cb.args.get(src as usize) {
            Some(ArgData::Tensor(t)) => t.shape.first().copied().unwrap_or(0),
            _ => 0,
        };
        // `x % (len + 6) - 3`: mostly inside, a few before or past the elements (and, for
        // unsigned offsets, far past: the subtraction wraps).
        let ty = self.int_elem();
        let x = self.operand(ty, shape)?;
        let m = self.konst(ty, Literal::Int(len as i64 + 6), shape)?;
        let three = self.konst(ty, Literal::Int(3), shape)?;
        let r = self.def_hidden(Op::Binary(BinaryOp::Rem, x, m))?;
        let offsets = self.def_hidden(Op::Binary(BinaryOp::Sub, r, three))?;
        let mask = if self.chance(0.5) {
            Some(self.operand(S::Bool, shape)?)
        } else {
            None
        };
        let padding = self.padding(elem);
        self.def(Op::Gather {
            tensor: src,
            offsets,
            mask,
            padding,
        })
    }

    /// A scatter of a value made last (or a fresh one) to a raw pointer of its own: element
    /// `c` of block `b` to place `b * n + c` (row-major, `n` the tile's elements) shifted by
    /// up to two either way, so that no two blocks write one element; a random mask now and
    /// then. The rest of the pointer's allocation keeps its poison.
    pub(crate) fn scatter(&mut self) -> R<()> {
        if self.raw_count() >= MAX_RAW {
            return Ok(());
        }
        let elem = self.elem(true);
        let shape = if self.chance(0.2) {
            Vec::new()
        } else {
            self.work.clone()
        };
        let n: u32 = shape.iter().product();
        let blocks: u32 = self.grid.iter().product();
        let offset = self.rng.random_range(0..4u64);
        let name = format!("sink{}", self.cb.args.len());
        let poison = self.cfg.poison;
        let sink = self.cb.raw_pointer(
            &mut self.rng,
            &name,
            elem,
            offset + u64::from(blocks) * u64::from(n) + 2,
            offset,
            Some(poison),
        );
        let linear = self.linear_block_index()?;
        let linear = self.def_hidden(Op::Cast {
            value: linear,
            to: Elem::Known(S::I64),
        })?;
        let shift = self.rng.random_range(-2..=2i64);
        let n_c = self.konst(S::I64, Literal::Int(i64::from(n)), &[])?;
        let shift_c = self.konst(S::I64, Literal::Int(shift), &[])?;
        let first = self.def_hidden(Op::Binary(BinaryOp::Mul, linear, n_c))?;
        let first = self.def_hidden(Op::Binary(BinaryOp::Add, first, shift_c))?;
        let mut offsets = self.splat(first, &shape)?;
        let mut weight = 1i64;
        for axis in (0..shape.len()).rev() {
            let along = self.def_hidden(Op::Iota {
                elem: Elem::Known(S::I64),
                shape: shape_of(&shape),
                axis: axis as u32,
            })?;
            let w = self.konst(S::I64, Literal::Int(weight), &shape)?;
            let term = self.def_hidden(Op::Binary(BinaryOp::Mul, along, w))?;
            offsets = self.def_hidden(Op::Binary(BinaryOp::Add, offsets, term))?;
            weight *= i64::from(shape[axis]);
        }
        let recent = self.recent_observable(4, &shape);
        let value = if !recent.is_empty() && self.chance(0.7) {
            let v = self.choose(&recent);
            let v = self.as_shape(v, &shape)?;
            self.convert(v, elem)?
        } else {
            self.operand(elem, &shape)?
        };
        let mask = if self.chance(0.5) {
            Some(self.operand(S::Bool, &shape)?)
        } else {
            None
        };
        self.push(Stmt::Scatter {
            tensor: sink,
            offsets,
            value,
            mask,
        });
        Ok(())
    }

    /// `x + gx * (y + gy * z)` for this block, as `I32`.
    fn linear_block_index(&mut self) -> R<TileValue> {
        let [bx, by, bz] = [0u32, 1, 2].map(|a| self.def_hidden(Op::BlockId(a)));
        let (bx, by, bz) = (bx?, by?, bz?);
        let gx = self.konst(S::I32, Literal::Int(i64::from(self.grid[0])), &[])?;
        let gy = self.konst(S::I32, Literal::Int(i64::from(self.grid[1])), &[])?;
        let z = self.def_hidden(Op::Binary(BinaryOp::Mul, gy, bz))?;
        let yz = self.def_hidden(Op::Binary(BinaryOp::Add, by, z))?;
        let s = self.def_hidden(Op::Binary(BinaryOp::Mul, gx, yz))?;
        self.def_hidden(Op::Binary(BinaryOp::Add, bx, s))
    }

    /// Stores a tile of its type and shape to output `o`: mostly one of the values made
    /// last, converted and shaped, else any operand.
    pub(crate) fn store(&mut self, o: u32) -> R<()> {
        let (elem, tile) = self.output_of(o)?;
        let recent = self.recent_observable(4, &tile);
        let v = if !recent.is_empty() && self.chance(0.7) {
            let v = self.choose(&recent);
            let v = self.as_shape(v, &tile)?;
            self.convert(v, elem)?
        } else {
            self.operand(elem, &tile)?
        };
        self.push(Stmt::Store {
            tensor: o,
            value: v,
        });
        Ok(())
    }

    /// The last `n` visible values that [`as_shape`](Self::as_shape) makes tiles of
    /// `target` of, latest first.
    pub(crate) fn recent_observable(&mut self, n: usize, target: &[u32]) -> Vec<TileValue> {
        let count: u32 = target.iter().product();
        let mut found: Vec<TileValue> = self
            .scopes
            .iter()
            .flatten()
            .copied()
            .filter(|&v| {
                let shape = self.shape_of_value(v);
                shape.is_empty()
                    || shape.iter().product::<u32>() == count
                    || line_axis(&shape, target).is_some()
            })
            .collect();
        found.sort_by_key(|v| std::cmp::Reverse(v.index()));
        found.truncate(n);
        found
    }

    /// `v` as a tile of `target`: itself, a scalar repeated, the same elements reshaped, or
    /// a line of `target` (a reduction's result) broadcast back along its missing axis.
    pub(crate) fn as_shape(&mut self, v: TileValue, target: &[u32]) -> R<TileValue> {
        let shape = self.shape_of_value(v);
        if shape == target {
            return Ok(v);
        }
        if shape.is_empty() {
            return self.splat(v, target);
        }
        if let Some(axis) = line_axis(&shape, target) {
            let mut kept = target.to_vec();
            kept[axis] = 1;
            let line = self.def_hidden(Op::Reshape {
                value: v,
                shape: shape_of(&kept),
            })?;
            return self.def_hidden(Op::Broadcast {
                value: line,
                shape: shape_of(target),
            });
        }
        self.def_hidden(Op::Reshape {
            value: v,
            shape: shape_of(target),
        })
    }

    /// Up to three more outputs (tiles of `W`, tensors of the first output's shape), each
    /// storing one of the values made last as it is: so that what the body computed shows in
    /// memory bit for bit.
    pub(crate) fn observe(&mut self) -> R<()> {
        let work = self.work.clone();
        let recent = self.recent_observable(6, &work);
        let want = 1 + self.below(3);
        let shape = match &self.cb.args[self.outputs[0] as usize] {
            ArgData::Tensor(t) => t.shape.clone(),
            ArgData::Scalar(_) => return Err(self.error("the first output is a scalar".into())),
        };
        let mut taken = Vec::new();
        for _ in 0..want {
            let left: Vec<TileValue> = recent
                .iter()
                .copied()
                .filter(|v| !taken.contains(v))
                .collect();
            if left.is_empty() {
                break;
            }
            let v = self.choose(&left);
            taken.push(v);
            let elem = self.elem_of(v);
            let kind = if self.chance(0.5) {
                ViewKind::Contiguous
            } else {
                ViewKind::Injective
            };
            let name = format!("obs{}", self.outputs.len());
            let o = self.output_param(&name, elem, &work, &shape, kind);
            self.outputs.push(o);
            let w = self.as_shape(v, &work)?;
            self.push(Stmt::Store {
                tensor: o,
                value: w,
            });
        }
        Ok(())
    }

    /// A random permutation of `0..rank`.
    pub(crate) fn permutation(&mut self, rank: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..rank).collect();
        for i in (1..rank).rev() {
            let j = self.rng.random_range(0..=i);
            p.swap(i, j);
        }
        p
    }
}

/// The axis of `target` that `shape` lacks, when `shape` is `target` without one axis (the
/// shape of a reduction of a tile of `target`).
fn line_axis(shape: &[u32], target: &[u32]) -> Option<usize> {
    if shape.len() + 1 != target.len() {
        return None;
    }
    (0..target.len()).find(|&a| {
        let mut t = target.to_vec();
        t.remove(a);
        t == shape
    })
}
