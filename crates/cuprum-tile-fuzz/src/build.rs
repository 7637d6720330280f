//! Building a [`Case`]: a tile kernel's parameters declared together with the launch's
//! arguments (a poisoned tensor per output, a random or given tensor per input, a value per
//! scalar), so that the two never disagree; the generator and the directed tests build
//! every case through this.

use cuprum_ir::{Constant, ScalarType};
use cuprum_tile_ir::{
    Dim, Elem, Op, ParamKind, TensorAccess, TensorDim, TensorParam, TileBuilder, TileValue,
    grid_of, validate_kernel,
};
use cuprum_tile_lower::LowerOptions;
use rand::rngs::SmallRng;

use crate::compare::Tolerance;
use crate::tensor::{Tensor, ViewKind, poisoned_tensor, random_tensor};
use crate::{ArgData, Case};

/// A case's kernel is not valid tile IR, or its tensors give no grid: a bug of whoever built
/// it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tile fuzz case `{kernel}` (seed {seed}): {message}")]
pub struct InvalidCase {
    /// The kernel's name.
    pub kernel: String,
    /// The seed it was built from.
    pub seed: u64,
    /// What is wrong.
    pub message: String,
}

/// A kernel under construction and its launch's arguments, one per parameter.
pub struct CaseBuilder {
    /// The kernel.
    pub b: TileBuilder,
    /// One argument per parameter declared so far.
    pub args: Vec<ArgData>,
    seed: u64,
    poison: u8,
}

impl CaseBuilder {
    /// A kernel named `name` built from `seed`, whose outputs start as `poison` bytes.
    pub fn new(name: impl Into<String>, seed: u64, poison: u8) -> Self {
        Self {
            b: TileBuilder::new(name),
            args: Vec::new(),
            seed,
            poison,
        }
    }

    /// An error naming this case.
    pub fn invalid(&self, message: impl Into<String>) -> InvalidCase {
        InvalidCase {
            kernel: self.b.kernel().name.clone(),
            seed: self.seed,
            message: message.into(),
        }
    }

    /// Appends `value = op`, typed by the tile IR's rules.
    pub fn def(&mut self, op: Op) -> Result<TileValue, InvalidCase> {
        let what = format!("{op:?}");
        self.b
            .def(op)
            .map_err(|e| self.invalid(format!("{e} (in {what})")))
    }

    /// A partitioned output of `elem` cut into tiles `tile`, its tensor of `shape` in a
    /// random view of `kind`, poisoned.
    pub fn output(
        &mut self,
        rng: &mut SmallRng,
        name: &str,
        elem: ScalarType,
        tile: &[u32],
        shape: &[u64],
        kind: ViewKind,
    ) -> u32 {
        let access = TensorAccess::Partitioned;
        self.tiled_output(rng, name, (elem, access), tile, shape, kind)
    }

    /// An output of `elem` and `access` (partitioned or mapped) cut into tiles `tile`, its
    /// tensor of `shape` in a random view of `kind`, poisoned.
    fn tiled_output(
        &mut self,
        rng: &mut SmallRng,
        name: &str,
        (elem, access): (ScalarType, TensorAccess),
        tile: &[u32],
        shape: &[u64],
        kind: ViewKind,
    ) -> u32 {
        let dims = tile
            .iter()
            .map(|&n| TensorDim::Static(Dim::Known(n)))
            .collect();
        let p = self.b.param(
            name,
            ParamKind::Tensor(TensorParam {
                elem: Elem::Known(elem),
                dims,
                access,
            }),
        );
        let t = poisoned_tensor(rng, elem, shape, kind, self.poison);
        self.args.push(ArgData::Tensor(t));
        p
    }

    /// A mapped output of `elem` cut into tiles `tile` (a persistent schedule deals them to
    /// the blocks), its tensor of `shape` in a random view of `kind`, poisoned. The case's
    /// grid is then the caller's to set.
    pub fn mapped_output(
        &mut self,
        rng: &mut SmallRng,
        name: &str,
        elem: ScalarType,
        tile: &[u32],
        shape: &[u64],
        kind: ViewKind,
    ) -> u32 {
        let access = TensorAccess::Mapped;
        self.tiled_output(rng, name, (elem, access), tile, shape, kind)
    }

    /// A read-only input holding `tensor`, declared with `dims` (`None`: every size
    /// dynamic).
    pub fn input_tensor(
        &mut self,
        name: &str,
        tensor: Tensor,
        dims: Option<Vec<TensorDim>>,
    ) -> u32 {
        let dims = dims.unwrap_or_else(|| vec![TensorDim::Dynamic; tensor.shape.len()]);
        let p = self.b.param(
            name,
            ParamKind::Tensor(TensorParam {
                elem: Elem::Known(tensor.elem),
                dims,
                access: TensorAccess::Read,
            }),
        );
        self.args.push(ArgData::Tensor(tensor));
        p
    }

    /// A raw pointer (an `unsafe` entry's `*mut T`) into a fresh allocation of `alloc_len`
    /// elements of `elem`, `offset` elements from its start: random elements when `poison`
    /// is `None`, else every byte `poison`. The kernel sees the elements from the pointer to
    /// the allocation's end, and the comparison checks the whole allocation.
    pub fn raw_pointer(
        &mut self,
        rng: &mut SmallRng,
        name: &str,
        elem: ScalarType,
        alloc_len: u64,
        offset: u64,
        poison: Option<u8>,
    ) -> u32 {
        let size = elem.size_bytes() as usize;
        let mut bytes = vec![poison.unwrap_or(0); alloc_len as usize * size];
        if poison.is_none() {
            for i in 0..alloc_len as usize {
                let c = crate::tensor::random_element(rng, elem);
                crate::tensor::set_element(&mut bytes, elem, i, c.bits);
            }
        }
        let p = self.b.param(
            name,
            ParamKind::Tensor(TensorParam {
                elem: Elem::Known(elem),
                dims: vec![TensorDim::Dynamic],
                access: TensorAccess::Raw,
            }),
        );
        self.args.push(ArgData::Tensor(Tensor {
            elem,
            shape: vec![alloc_len.saturating_sub(offset)],
            strides: vec![1],
            offset,
            bytes,
        }));
        p
    }

    /// A read-only input of `elem` and `shape`, random elements in a random view of `kind`.
    pub fn input(
        &mut self,
        rng: &mut SmallRng,
        name: &str,
        elem: ScalarType,
        shape: &[u64],
        kind: ViewKind,
    ) -> u32 {
        let t = random_tensor(rng, elem, shape, kind);
        self.input_tensor(name, t, None)
    }

    /// A scalar parameter holding `value`; returns its rank-0 value.
    pub fn scalar(&mut self, name: &str, value: Constant) -> Result<TileValue, InvalidCase> {
        let p = self.b.param(name, ParamKind::Scalar(Elem::Known(value.ty)));
        self.args.push(ArgData::Scalar(value));
        self.def(Op::Param(p))
    }

    /// The element type of argument `param`'s tensor.
    pub fn tensor_elem(&self, param: u32) -> Option<ScalarType> {
        match self.args.get(param as usize) {
            Some(ArgData::Tensor(t)) => Some(t.elem),
            _ => None,
        }
    }

    /// The case: the kernel validated, the grid its partitioned tensors give (one block
    /// when it has none).
    pub fn finish(self, tolerance: Tolerance, options: LowerOptions) -> Result<Case, InvalidCase> {
        let kernel = self.b.finish();
        let invalid = |message: String| InvalidCase {
            kernel: kernel.name.clone(),
            seed: self.seed,
            message,
        };
        validate_kernel(&kernel).map_err(|e| invalid(e.to_string()))?;
        let shapes: Vec<Option<&[u64]>> = self
            .args
            .iter()
            .map(|a| match a {
                ArgData::Tensor(t) => Some(t.shape.as_slice()),
                ArgData::Scalar(_) => None,
            })
            .collect();
        let grid = grid_of(&kernel, &shapes)
            .map_err(|e| invalid(e.to_string()))?
            .unwrap_or([1, 1, 1]);
        if grid.contains(&0) {
            return Err(invalid(format!("the grid {grid:?} has no block")));
        }
        Ok(Case {
            seed: self.seed,
            kernel,
            args: self.args,
            grid,
            tolerance,
            options,
        })
    }
}
