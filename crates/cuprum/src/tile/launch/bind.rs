//! Binding a launch's arguments to a tile kernel's parameters, before anything runs: every
//! check that refuses bad input ([`LaunchProblem`]), the values of the kernel's generic
//! parameters (from the partitions' tile shapes, the tensors' shapes and element types, and
//! `.generics(..)`), and the grid (from the partitions, or `.grid(..)`).
//!
//! This is plain data in, plain data out, so that every refusal is tested without a device
//! or a lowering.

use cuprum_ir::ScalarType;
use cuprum_tile_ir::{
    Dim, Elem, ParamKind, Specialization, TensorAccess, TensorDim, TensorParam, TileKernel,
};

use crate::CudaContext;
use crate::tile::error::LaunchProblem;
use crate::tile::tensor::partition_grid;

/// What a tensor argument is, as the launch sees it.
#[derive(Clone, Copy)]
pub(crate) struct TensorDesc<'a> {
    /// The element type.
    pub elem: ScalarType,
    /// The shape.
    pub shape: &'a [usize],
    /// The strides, in elements.
    pub strides: &'a [usize],
    /// The first element's position in the allocation.
    pub offset: usize,
    /// The allocation's device address.
    pub address: u64,
    /// The allocation's length, in elements.
    pub alloc_len: usize,
    /// The context owning the allocation.
    pub ctx: &'a CudaContext,
}

/// One argument of a launch, as the launch sees it.
#[derive(Clone, Copy)]
pub(crate) enum ArgDesc<'a> {
    /// A tensor; `tile` is its partition's tile shape when it is partitioned.
    Tensor {
        /// The tensor.
        tensor: TensorDesc<'a>,
        /// The partition's tile shape.
        tile: Option<&'a [usize]>,
    },
    /// A mapped partition: its tensor, tile shape, map shape and block count.
    Mapped {
        /// The tensor.
        tensor: TensorDesc<'a>,
        /// The tile shape.
        tile: &'a [usize],
        /// The map shape.
        map: &'a [usize],
        /// The blocks of the launch.
        blocks: u32,
    },
    /// A raw pointer (`DevicePointer`), before [`place_pointers`] finds its allocation.
    RawPointer {
        /// The element type.
        elem: ScalarType,
        /// The address.
        address: u64,
    },
    /// A raw pointer placed in its allocation: the rank-1 tensor from the pointer to the
    /// allocation's end.
    Pointer {
        /// That tensor.
        tensor: TensorDesc<'a>,
    },
    /// A scalar: its type and bits (zero-extended, as `KernelArg::Scalar`).
    Scalar {
        /// The type.
        ty: ScalarType,
        /// The bits.
        bits: u64,
    },
}

impl ArgDesc<'_> {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            ArgDesc::Tensor { tile: Some(_), .. } => "a partitioned tensor",
            ArgDesc::Tensor { tile: None, .. } => "a tensor that is not partitioned",
            ArgDesc::RawPointer { .. } | ArgDesc::Pointer { .. } => "a raw pointer",
            ArgDesc::Mapped { .. } => "a mapped partition",
            ArgDesc::Scalar { .. } => "a scalar",
        }
    }
}

/// Where a raw pointer argument lies: the rank-1 tensor from it to its allocation's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PointerPlace {
    elem: ScalarType,
    /// Elements from the pointer to the allocation's end.
    len: [usize; 1],
    /// The pointer's element position in the allocation.
    offset: usize,
    /// The allocation's first address and its length in elements.
    base: u64,
    alloc_len: usize,
}

const UNIT_STRIDE: [usize; 1] = [1];

/// Finds the allocation of each raw pointer argument among `ctx`'s live ones (`None` for
/// other arguments); a pointer outside them, into another context's, or not aligned to its
/// element is refused.
pub(crate) fn place_pointers(
    kernel: &TileKernel,
    ctx: &CudaContext,
    args: &[ArgDesc<'_>],
) -> Result<Vec<Option<PointerPlace>>, LaunchProblem> {
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            let ArgDesc::RawPointer { elem, address } = *a else {
                return Ok(None);
            };
            let param = kernel
                .params
                .get(i)
                .map_or_else(|| format!("#{i}"), |p| p.name.clone());
            let bad = |reason: &str| LaunchProblem::BadPointer {
                param: param.clone(),
                address,
                reason: reason.to_owned(),
            };
            let size = u64::from(elem.size_bytes());
            let (base, bytes) = match cuprum_runtime::allocation_containing(ctx, address) {
                cuprum_runtime::AddressOwner::Own { base, bytes } => (base, bytes),
                cuprum_runtime::AddressOwner::Foreign => {
                    return Err(LaunchProblem::ContextMismatch { param });
                }
                cuprum_runtime::AddressOwner::Unknown => {
                    return Err(bad("is in no live allocation"));
                }
            };
            // Allocations start 256-byte aligned, so an aligned address is one whose
            // distance from the start is a whole number of elements.
            if !(address - base).is_multiple_of(size) {
                return Err(bad(&format!("is not aligned to its {size}-byte elements")));
            }
            let to_usize =
                |n: u64| usize::try_from(n).map_err(|_| bad("is past this host's sizes"));
            Ok(Some(PointerPlace {
                elem,
                len: [to_usize((base + bytes - address) / size)?],
                offset: to_usize((address - base) / size)?,
                base,
                alloc_len: to_usize(bytes / size)?,
            }))
        })
        .collect()
}

/// `args` with each raw pointer replaced by its placed tensor (`places` from
/// [`place_pointers`]).
pub(crate) fn with_places<'a>(
    args: &[ArgDesc<'a>],
    places: &'a [Option<PointerPlace>],
    ctx: &'a CudaContext,
) -> Vec<ArgDesc<'a>> {
    args.iter()
        .zip(places)
        .map(|(a, place)| match place {
            Some(p) => ArgDesc::Pointer {
                tensor: TensorDesc {
                    elem: p.elem,
                    shape: &p.len,
                    strides: &UNIT_STRIDE,
                    offset: p.offset,
                    address: p.base,
                    alloc_len: p.alloc_len,
                    ctx,
                },
            },
            None => *a,
        })
        .collect()
}

/// What a launch runs: the kernel's specialization and the grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The values of the kernel's generic parameters.
    pub spec: Specialization,
    /// Tile blocks along x, y and z.
    pub grid: (u32, u32, u32),
}

/// The largest number of tile blocks along one grid axis this module accepts; the device's
/// own limits are checked again by the runtime.
const MAX_GRID_AXIS: u64 = i32::MAX as u64;

/// The grid of a tensor of `shape` partitioned into tiles of `tile`, for the launch of
/// `param`'s argument (see [`partition_grid`]).
pub(crate) fn grid_of(
    param: &str,
    shape: &[usize],
    tile: &[usize],
) -> Result<(u32, u32, u32), LaunchProblem> {
    let Some(blocks) = partition_grid(shape, tile) else {
        return Err(if shape.len() == tile.len() {
            LaunchProblem::PartitionTile {
                param: param.to_owned(),
                partition: tile.to_vec(),
                kernel_tile: "a tile with no zero size".into(),
            }
        } else {
            LaunchProblem::PartitionRank {
                param: param.to_owned(),
                shape: shape.to_vec(),
                partition: tile.to_vec(),
            }
        });
    };
    if blocks.len() > 3 || blocks.iter().any(|&b| b > MAX_GRID_AXIS) {
        return Err(LaunchProblem::GridTooLarge {
            param: param.to_owned(),
            grid: blocks,
        });
    }
    // In range: checked just above.
    let axis = |i: usize| blocks.get(i).map_or(1, |&b| b as u32);
    Ok((axis(0), axis(1), axis(2)))
}

/// A generic parameter's value and where it came from, while binding.
struct Bound<V> {
    value: V,
    source: String,
}

/// The values found so far for a kernel's const and type parameters.
struct Bindings<'k> {
    kernel: &'k TileKernel,
    consts: Vec<Option<Bound<i64>>>,
    types: Vec<Option<Bound<ScalarType>>>,
}

impl<'k> Bindings<'k> {
    fn new(kernel: &'k TileKernel) -> Self {
        Self {
            kernel,
            consts: kernel.consts.iter().map(|_| None).collect(),
            types: kernel.types.iter().map(|_| None).collect(),
        }
    }

    fn const_name(&self, index: u32) -> String {
        self.kernel
            .consts
            .get(index as usize)
            .map_or_else(|| format!("${index}"), |c| c.name.clone())
    }

    fn type_name(&self, index: u32) -> String {
        self.kernel
            .types
            .get(index as usize)
            .cloned()
            .unwrap_or_else(|| format!("%T{index}"))
    }

    fn bind_const(&mut self, index: u32, value: i64, source: String) -> Result<(), LaunchProblem> {
        let name = self.const_name(index);
        let Some(slot) = self.consts.get_mut(index as usize) else {
            return Err(LaunchProblem::GenericValue {
                name,
                value: value.to_string(),
                expected: "a parameter the kernel declares",
            });
        };
        match slot {
            Some(b) if b.value != value => Err(LaunchProblem::GenericConflict {
                name,
                first: format!("{} from {}", b.value, b.source),
                second: format!("{value} from {source}"),
            }),
            Some(_) => Ok(()),
            None => {
                *slot = Some(Bound { value, source });
                Ok(())
            }
        }
    }

    fn bind_type(
        &mut self,
        index: u32,
        value: ScalarType,
        source: String,
    ) -> Result<(), LaunchProblem> {
        let name = self.type_name(index);
        let Some(slot) = self.types.get_mut(index as usize) else {
            return Err(LaunchProblem::GenericValue {
                name,
                value: value.to_string(),
                expected: "a parameter the kernel declares",
            });
        };
        match slot {
            Some(b) if b.value != value => Err(LaunchProblem::GenericConflict {
                name,
                first: format!("{} from {}", b.value, b.source),
                second: format!("{value} from {source}"),
            }),
            Some(_) => Ok(()),
            None => {
                *slot = Some(Bound { value, source });
                Ok(())
            }
        }
    }

    /// The specialization the bound values give, or the parameters still unbound.
    fn specialization(&self, names: &[String]) -> Result<Specialization, LaunchProblem> {
        let kernel = self.kernel;
        let unbound: Vec<String> = names
            .iter()
            .filter(|n| {
                let c = kernel.consts.iter().position(|c| &c.name == *n);
                let t = kernel.types.iter().position(|t| t == *n);
                c.is_some_and(|i| self.consts[i].is_none())
                    || t.is_some_and(|i| self.types[i].is_none())
            })
            .cloned()
            .chain(
                // Parameters `names` does not list (a hand-made launch): named by the kernel.
                kernel
                    .consts
                    .iter()
                    .zip(&self.consts)
                    .filter(|(c, v)| v.is_none() && !names.contains(&c.name))
                    .map(|(c, _)| c.name.clone()),
            )
            .chain(
                kernel
                    .types
                    .iter()
                    .zip(&self.types)
                    .filter(|(t, v)| v.is_none() && !names.contains(t))
                    .map(|(t, _)| t.clone()),
            )
            .collect();
        if !unbound.is_empty() {
            return Err(LaunchProblem::GenericUnbound { names: unbound });
        }
        Ok(Specialization {
            consts: self.consts.iter().flatten().map(|c| c.value).collect(),
            types: self.types.iter().flatten().map(|t| t.value).collect(),
        })
    }

    /// Binds the `.generics(..)` values, given in the order of `names` (the source's generic
    /// parameters, array parameters flattened to `S[0]`, `S[1]`, ...).
    fn bind_explicit(&mut self, names: &[String], values: &[String]) -> Result<(), LaunchProblem> {
        if names.len() != values.len() {
            return Err(LaunchProblem::GenericCount {
                names: names.to_vec(),
                given: values.len(),
            });
        }
        let source = || "`.generics(..)`".to_owned();
        for (name, value) in names.iter().zip(values) {
            let text = value.trim();
            if let Some(i) = self.kernel.consts.iter().position(|c| &c.name == name) {
                let parsed = if self.kernel.consts[i].ty == ScalarType::Bool {
                    match text {
                        "true" => Some(1),
                        "false" => Some(0),
                        _ => None,
                    }
                } else {
                    text.parse::<i64>().ok()
                };
                let Some(v) = parsed else {
                    return Err(LaunchProblem::GenericValue {
                        name: name.clone(),
                        value: value.clone(),
                        expected: if self.kernel.consts[i].ty == ScalarType::Bool {
                            "`true` or `false`"
                        } else {
                            "an integer"
                        },
                    });
                };
                self.bind_const(i as u32, v, source())?;
            } else if let Some(i) = self.kernel.types.iter().position(|t| t == name) {
                let Some(ty) = ScalarType::from_rust_name(text) else {
                    return Err(LaunchProblem::GenericValue {
                        name: name.clone(),
                        value: value.clone(),
                        expected: "an element type (`f32`, `bf16`, `i32`, ...)",
                    });
                };
                self.bind_type(i as u32, ty, source())?;
            } else {
                return Err(LaunchProblem::GenericValue {
                    name: name.clone(),
                    value: value.clone(),
                    expected: "a parameter the kernel declares",
                });
            }
        }
        Ok(())
    }

    /// Binds (or checks) an element type a parameter declares against an argument's.
    fn element(
        &mut self,
        param: &str,
        declared: Elem,
        given: ScalarType,
    ) -> Result<(), LaunchProblem> {
        match declared {
            Elem::Known(t) if t == given => Ok(()),
            Elem::Known(t) => Err(LaunchProblem::ElementType {
                param: param.to_owned(),
                expected: t.to_string(),
                given,
            }),
            Elem::Param(i) => {
                self.bind_type(i, given, format!("the argument `{param}`"))
                    .map_err(|e| match e {
                        // Name the parameter whose element type disagrees.
                        LaunchProblem::GenericConflict { name, first, .. } => {
                            LaunchProblem::ElementType {
                                param: param.to_owned(),
                                expected: format!("{name}, which is {first}"),
                                given,
                            }
                        }
                        other => other,
                    })
            }
        }
    }

    /// `[B, 16]`: a declared shape with generic sizes named.
    fn shape_text(&self, dims: &[TensorDim]) -> String {
        let dims: Vec<String> = dims
            .iter()
            .map(|d| match d {
                TensorDim::Dynamic => "-1".to_owned(),
                TensorDim::Static(Dim::Known(n)) => n.to_string(),
                TensorDim::Static(Dim::Param(i)) => self.const_name(*i),
            })
            .collect();
        format!("[{}]", dims.join(", "))
    }

    /// Binds and checks one tensor argument against its parameter; gives its grid when it is
    /// partitioned.
    fn tensor(
        &mut self,
        name: &str,
        declared: &TensorParam,
        tensor: &TensorDesc<'_>,
        tile: Option<&[usize]>,
    ) -> Result<Option<(u32, u32, u32)>, LaunchProblem> {
        if tensor.shape.len() != declared.rank() {
            return Err(LaunchProblem::Rank {
                param: name.to_owned(),
                declared: declared.rank(),
                shape: tensor.shape.to_vec(),
            });
        }
        if tensor.shape.contains(&0) {
            return Err(LaunchProblem::EmptyTensor {
                param: name.to_owned(),
                shape: tensor.shape.to_vec(),
            });
        }
        self.element(name, declared.elem, tensor.elem)?;
        let Some(tile) = tile else {
            // A read-only tensor: its static sizes are its own.
            for (axis, d) in declared.dims.iter().enumerate() {
                let size = tensor.shape[axis];
                match d {
                    TensorDim::Dynamic => {}
                    TensorDim::Static(Dim::Known(n)) => {
                        if size as u64 != u64::from(*n) {
                            return Err(LaunchProblem::StaticDim {
                                param: name.to_owned(),
                                axis,
                                declared: u64::from(*n),
                                shape: tensor.shape.to_vec(),
                            });
                        }
                    }
                    TensorDim::Static(Dim::Param(c)) => {
                        let value = i64::try_from(size).unwrap_or(i64::MAX);
                        self.bind_const(*c, value, format!("the shape of `{name}`"))?;
                    }
                }
            }
            return Ok(None);
        };
        if tile.len() != tensor.shape.len() {
            return Err(LaunchProblem::PartitionRank {
                param: name.to_owned(),
                shape: tensor.shape.to_vec(),
                partition: tile.to_vec(),
            });
        }
        let misfit = |this: &Self| LaunchProblem::PartitionTile {
            param: name.to_owned(),
            partition: tile.to_vec(),
            kernel_tile: this.shape_text(&declared.dims),
        };
        if tile.contains(&0) {
            return Err(misfit(self));
        }
        // A partitioned tensor's declared dims are its tile shape.
        for (axis, d) in declared.dims.iter().enumerate() {
            let size = tile[axis];
            match d {
                TensorDim::Dynamic => {}
                TensorDim::Static(Dim::Known(n)) => {
                    if size as u64 != u64::from(*n) {
                        return Err(misfit(self));
                    }
                }
                TensorDim::Static(Dim::Param(c)) => {
                    let value = i64::try_from(size).unwrap_or(i64::MAX);
                    self.bind_const(*c, value, format!("the partition of `{name}`"))?;
                }
            }
        }
        grid_of(name, tensor.shape, tile).map(Some)
    }
}

/// Checks the arguments of a launch of `kernel` on `ctx` and computes what it runs. `names`
/// are the kernel's generic parameters in source order (arrays flattened), to which
/// `explicit` (from `.generics(..)`) gives values; `grid` is `.grid(..)`'s.
pub(crate) fn plan(
    kernel: &TileKernel,
    names: &[String],
    explicit: Option<&[String]>,
    grid: Option<(u32, u32, u32)>,
    ctx: &CudaContext,
    args: &[ArgDesc<'_>],
) -> Result<Plan, LaunchProblem> {
    if args.len() != kernel.params.len() {
        return Err(LaunchProblem::ArgumentCount {
            expected: kernel.params.len(),
            given: args.len(),
        });
    }
    let mut b = Bindings::new(kernel);
    if let Some(values) = explicit {
        b.bind_explicit(names, values)?;
    }
    let mut inferred: Option<(String, (u32, u32, u32))> = None;
    for (param, arg) in kernel.params.iter().zip(args) {
        let name = param.name.as_str();
        match (&param.kind, arg) {
            (ParamKind::Scalar(elem), ArgDesc::Scalar { ty, .. }) => {
                b.element(name, *elem, *ty)?;
            }
            (
                ParamKind::Tensor(t),
                ArgDesc::Mapped {
                    tensor,
                    tile,
                    map,
                    blocks,
                },
            ) if t.access == TensorAccess::Mapped => {
                if !tensor.ctx.same_context(ctx) {
                    return Err(LaunchProblem::ContextMismatch {
                        param: name.to_owned(),
                    });
                }
                // Bound as a partition of tiles `tile` (its grid is the tiles per axis).
                let partitioned = TensorParam {
                    access: TensorAccess::Partitioned,
                    ..t.clone()
                };
                let tiles = b
                    .tensor(name, &partitioned, tensor, Some(tile))?
                    .ok_or_else(|| LaunchProblem::BadMap {
                        param: name.to_owned(),
                        reason: "has no tiles".into(),
                    })?;
                let index = param_index(kernel, name);
                let g = check_map(kernel, index, name, map, *blocks, tiles, &mut b)?;
                merge_grid(&mut inferred, name, g)?;
            }
            (ParamKind::Tensor(t), ArgDesc::Pointer { tensor })
                if t.access == TensorAccess::Raw =>
            {
                b.element(name, t.elem, tensor.elem)?;
            }
            // A raw pointer or a mapped output takes its own kind of argument only.
            (ParamKind::Tensor(t), ArgDesc::Tensor { .. })
                if matches!(t.access, TensorAccess::Raw | TensorAccess::Mapped) =>
            {
                return Err(LaunchProblem::ArgumentKind {
                    param: name.to_owned(),
                    expected: describe(&param.kind),
                    given: arg.kind(),
                });
            }
            (ParamKind::Tensor(t), ArgDesc::Tensor { tensor, tile }) => {
                let expected_tile = t.access == TensorAccess::Partitioned;
                if expected_tile != tile.is_some() {
                    return Err(LaunchProblem::ArgumentKind {
                        param: name.to_owned(),
                        expected: describe(&param.kind),
                        given: arg.kind(),
                    });
                }
                if !tensor.ctx.same_context(ctx) {
                    return Err(LaunchProblem::ContextMismatch {
                        param: name.to_owned(),
                    });
                }
                if let Some(g) = b.tensor(name, t, tensor, *tile)? {
                    merge_grid(&mut inferred, name, g)?;
                }
            }
            (kind, arg) => {
                return Err(LaunchProblem::ArgumentKind {
                    param: name.to_owned(),
                    expected: describe(kind),
                    given: arg.kind(),
                });
            }
        }
    }
    check_aliasing(kernel, args)?;
    let spec = b.specialization(names)?;
    let grid = match (grid, inferred) {
        (Some(g), _) if g.0 == 0 || g.1 == 0 || g.2 == 0 => {
            return Err(LaunchProblem::BadGrid {
                given: g,
                reason: "has no tile blocks along some axis".into(),
            });
        }
        (Some(g), Some((first, inferred))) if g != inferred => {
            return Err(LaunchProblem::BadGrid {
                given: g,
                reason: format!(
                    "differs from the grid {inferred:?} the partition of `{first}` gives"
                ),
            });
        }
        (Some(g), _) => g,
        (None, Some((_, g))) => g,
        (None, None) => return Err(LaunchProblem::NoGrid),
    };
    Ok(Plan { spec, grid })
}

/// The specialization `values` (every generic parameter, in the order of `names`) give on
/// their own, before any argument is known: what compiling a kernel ahead of its launches
/// needs.
pub(crate) fn explicit_spec(
    kernel: &TileKernel,
    names: &[String],
    values: &[String],
) -> Result<Specialization, LaunchProblem> {
    let mut b = Bindings::new(kernel);
    b.bind_explicit(names, values)?;
    b.specialization(names)
}

/// What a parameter takes, for messages.
/// The block shape and dynamic shared memory a launch of cuTile Rust's lower-level API asks
/// for (its `LaunchConfig`, less the grid).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockRequest {
    /// The block shape.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory, in bytes.
    pub shared_bytes: u32,
}

/// The block and the dynamic shared memory (bytes) of a launch of a kernel the lowering made
/// for blocks of `threads` threads using `shared` bytes of dynamic shared memory, given what
/// the launch asked for (`None`: the module's launchers, which ask for nothing).
///
/// A tile kernel's threads are the lowering's choice, so the block asked for must be cuTile
/// Rust's `(1, 1, 1)` (one "thread" per tile block: the compiler's block) or the lowered block
/// itself; any other is refused. Shared memory asked for is honoured as in cuTile Rust, where
/// it is dynamic shared memory beyond what the compiled kernel declares: the launch reserves
/// it after the kernel's own (which lowers occupancy, as there); the runtime refuses a total
/// above the device's limit.
pub(crate) fn block_config(
    request: Option<BlockRequest>,
    threads: u32,
    shared: u32,
) -> Result<((u32, u32, u32), u32), LaunchProblem> {
    let lowered = (threads, 1, 1);
    let Some(request) = request else {
        return Ok((lowered, shared));
    };
    if request.block != (1, 1, 1) && request.block != lowered {
        return Err(LaunchProblem::BlockShape {
            given: request.block,
            lowered,
        });
    }
    Ok((lowered, shared.saturating_add(request.shared_bytes)))
}

fn describe(kind: &ParamKind) -> &'static str {
    match kind {
        ParamKind::Scalar(_) => "a scalar",
        ParamKind::Tensor(t) if t.access == TensorAccess::Partitioned => {
            "a partitioned tensor (`&mut Tensor`)"
        }
        ParamKind::Tensor(t) if t.access == TensorAccess::Raw => {
            "a raw pointer (`*mut T`: a `DevicePointer`)"
        }
        ParamKind::Tensor(t) if t.access == TensorAccess::Mapped => {
            "a mapped partition (`MappedPartitionMut`: `partition(..).map(..)`)"
        }
        ParamKind::Tensor(_) => "a tensor (`&Tensor`)",
    }
}

/// Records that argument `name` gives grid `g`, refusing one that differs from the first
/// argument's.
fn merge_grid(
    inferred: &mut Option<(String, (u32, u32, u32))>,
    name: &str,
    g: (u32, u32, u32),
) -> Result<(), LaunchProblem> {
    match inferred {
        Some((first, first_grid)) if *first_grid != g => Err(LaunchProblem::GridMismatch {
            first: first.clone(),
            first_grid: *first_grid,
            param: name.to_owned(),
            grid: g,
        }),
        Some(_) => Ok(()),
        None => {
            *inferred = Some((name.to_owned(), g));
            Ok(())
        }
    }
}

/// The index of the parameter named `name`.
fn param_index(kernel: &TileKernel, name: &str) -> u32 {
    kernel
        .params
        .iter()
        .position(|p| p.name == name)
        .unwrap_or(0) as u32
}

/// Checks mapped partition `name` (parameter `index`): a map of its tiles' rank whose entries
/// are at least 1 and, but for the second-to-last, 1; the map shapes of the kernel's loops
/// over it bound to (or checked against) it; between 1 and the tile count of blocks. Returns
/// the grid, `(blocks, 1, 1)`.
fn check_map(
    kernel: &TileKernel,
    index: u32,
    name: &str,
    map: &[usize],
    blocks: u32,
    tiles: (u32, u32, u32),
    b: &mut Bindings<'_>,
) -> Result<(u32, u32, u32), LaunchProblem> {
    let bad = |reason: String| LaunchProblem::BadMap {
        param: name.to_owned(),
        reason,
    };
    let rank = match &kernel.params[index as usize].kind {
        ParamKind::Tensor(t) => t.rank(),
        ParamKind::Scalar(_) => 0,
    };
    if map.len() != rank {
        return Err(bad(format!(
            "has a map shape of rank {} for tiles of rank {rank}",
            map.len()
        )));
    }
    for (axis, &m) in map.iter().enumerate() {
        let grouped = rank >= 2 && axis == rank - 2;
        if m == 0 || (m != 1 && !grouped) {
            return Err(bad(format!(
                "has map shape {map:?}: each entry is at least 1, and only the second-to-last may be above 1 (bands of that many rows of tiles)"
            )));
        }
    }
    let mut loops = Vec::new();
    kernel.body.visit(&mut |s| {
        if let cuprum_tile_ir::Stmt::ForTiles { tensor, map, .. } = s
            && *tensor == index
        {
            loops.push(map.clone());
        }
    });
    for declared in loops {
        for (axis, d) in declared.iter().enumerate() {
            match d {
                Dim::Known(n) if *n as usize != map[axis] => {
                    return Err(bad(format!(
                        "has map shape {map:?}, but the kernel declares {n} along axis {axis}"
                    )));
                }
                Dim::Known(_) => {}
                Dim::Param(c) => {
                    let value = i64::try_from(map[axis]).unwrap_or(i64::MAX);
                    b.bind_const(*c, value, format!("the map shape of `{name}`"))?;
                }
            }
        }
    }
    let total = u64::from(tiles.0) * u64::from(tiles.1) * u64::from(tiles.2);
    if blocks == 0 || u64::from(blocks) > total {
        return Err(bad(format!(
            "asks for {blocks} tile blocks for {total} tiles: give 1 to {total}"
        )));
    }
    Ok((blocks, 1, 1))
}

/// Refuses a partitioned output whose allocation is another argument's too, and a raw
/// pointer into a tensor argument's allocation.
fn check_aliasing(kernel: &TileKernel, args: &[ArgDesc<'_>]) -> Result<(), LaunchProblem> {
    for (i, a) in args.iter().enumerate() {
        let ArgDesc::Pointer { tensor: pointer } = a else {
            continue;
        };
        for (j, b) in args.iter().enumerate() {
            if let ArgDesc::Tensor { tensor, .. } = b
                && tensor.address == pointer.address
                && tensor.ctx.same_context(pointer.ctx)
            {
                return Err(LaunchProblem::PointerAliased {
                    pointer: kernel.params[i].name.clone(),
                    tensor: kernel.params[j].name.clone(),
                });
            }
        }
    }
    for (i, a) in args.iter().enumerate() {
        let ArgDesc::Tensor {
            tensor: out,
            tile: Some(_),
        } = a
        else {
            continue;
        };
        for (j, b) in args.iter().enumerate() {
            if let ArgDesc::Tensor { tensor, .. } = b
                && i != j
                && tensor.address == out.address
                && tensor.ctx.same_context(out.ctx)
            {
                return Err(LaunchProblem::Aliased {
                    output: kernel.params[i].name.clone(),
                    other: kernel.params[j].name.clone(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(block: (u32, u32, u32), shared_bytes: u32) -> Option<BlockRequest> {
        Some(BlockRequest {
            block,
            shared_bytes,
        })
    }

    #[test]
    fn a_launch_gets_the_lowered_block_and_the_shared_memory_asked_beyond_the_kernels() {
        assert_eq!(block_config(None, 128, 512), Ok(((128, 1, 1), 512)));
        assert_eq!(
            block_config(ask((1, 1, 1), 0), 128, 512),
            Ok(((128, 1, 1), 512))
        );
        assert_eq!(
            block_config(ask((128, 1, 1), 0), 128, 0),
            Ok(((128, 1, 1), 0))
        );
        assert_eq!(
            block_config(ask((1, 1, 1), 4096), 256, 512),
            Ok(((256, 1, 1), 4608))
        );
        assert_eq!(
            block_config(ask((1, 1, 1), u32::MAX), 256, 512),
            Ok(((256, 1, 1), u32::MAX)),
            "the runtime refuses what no device has"
        );
    }

    #[test]
    fn a_block_the_kernel_was_not_lowered_for_is_refused() {
        for block in [(256, 1, 1), (64, 2, 1), (0, 1, 1), (1, 1, 2), (128, 1, 1)] {
            assert_eq!(
                block_config(ask(block, 0), 64, 0),
                Err(LaunchProblem::BlockShape {
                    given: block,
                    lowered: (64, 1, 1)
                }),
                "{block:?}"
            );
        }
    }
}
