//! What the tile lowering's tests share: a small builder of tile kernels over
//! `TileBuilder`, lowering + optimizing + loading on the device `CudaContext::new(0)` picks
//! (the emulator here, the GPU where `gpu-pack` runs the binaries with `CUPRUM_DEVICE=cuda`),
//! tensors on the device (allocation, offset, shape, strides) and launches that pass the
//! `ArgSlot`s. Tests of what only the emulator reports (its typed trap errors, captured
//! prints) take [`emu`] instead: on a GPU a trap leaves the process's context unusable.
#![allow(dead_code)]

use std::sync::Arc;

use cuprum_ir::{BinaryOp, CmpOp, Module, ScalarType, UnaryOp};
use cuprum_runtime::{
    CudaContext, DeviceBuffer, DeviceCopy, DeviceScalar, Error, KernelArg, LaunchConfig,
    LoadedModule, Stream,
};
use cuprum_tile_ir::{
    Block, Combine, Dim, Elem, Literal, Op, ParamKind, Stmt, TensorAccess, TensorDim, TensorParam,
    TileBuilder, TileKernel, TileType, TileValue, View, shape_of,
};
use cuprum_tile_lower::{ArgSlot, LowerOptions, Lowered, lower_with};

pub mod kernels;

#[allow(unused_imports)]
pub use cuprum_testkit::random::rng;

/// A tile kernel under construction (panics on ill-typed operations: tests only).
pub struct Tk {
    pub b: TileBuilder,
}

pub fn f32e() -> Elem {
    Elem::Known(ScalarType::F32)
}

pub fn i32e() -> Elem {
    Elem::Known(ScalarType::I32)
}

impl Tk {
    pub fn new(name: &str) -> Self {
        Self {
            b: TileBuilder::new(name),
        }
    }

    /// `&Tensor<ty, {[-1, ..]}>` of `rank` dimensions.
    pub fn input(&mut self, name: &str, ty: ScalarType, rank: usize) -> u32 {
        self.b.param(
            name,
            ParamKind::Tensor(TensorParam {
                elem: Elem::Known(ty),
                dims: vec![TensorDim::Dynamic; rank],
                access: TensorAccess::Read,
            }),
        )
    }

    /// `&mut Tensor<ty, {tile}>`, partitioned into `tile`s.
    pub fn output(&mut self, name: &str, ty: ScalarType, tile: &[u32]) -> u32 {
        self.b.param(
            name,
            ParamKind::Tensor(TensorParam {
                elem: Elem::Known(ty),
                dims: tile
                    .iter()
                    .map(|&n| TensorDim::Static(Dim::Known(n)))
                    .collect(),
                access: TensorAccess::Partitioned,
            }),
        )
    }

    pub fn scalar_param(&mut self, name: &str, ty: ScalarType) -> TileValue {
        let p = self.b.param(name, ParamKind::Scalar(Elem::Known(ty)));
        self.def(Op::Param(p))
    }

    pub fn def(&mut self, op: Op) -> TileValue {
        let what = format!("{op:?}");
        self.b.def(op).unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    pub fn ty(&self, v: TileValue) -> TileType {
        self.b.ty(v).clone()
    }

    pub fn block_id(&mut self, axis: u32) -> TileValue {
        self.def(Op::BlockId(axis))
    }

    pub fn int(&mut self, v: i64) -> TileValue {
        self.def(Op::Const {
            value: Literal::Int(v),
            elem: i32e(),
            shape: vec![],
        })
    }

    pub fn constant(&mut self, ty: ScalarType, value: Literal, shape: &[u32]) -> TileValue {
        self.def(Op::Const {
            value,
            elem: Elem::Known(ty),
            shape: shape_of(shape),
        })
    }

    pub fn load_own(&mut self, tensor: u32, padding: Literal) -> TileValue {
        self.def(Op::Load {
            view: View::Own { tensor },
            padding,
        })
    }

    pub fn load(
        &mut self,
        tensor: u32,
        tile: &[u32],
        index: Vec<TileValue>,
        padding: Literal,
    ) -> TileValue {
        self.def(Op::Load {
            view: View::Tiled {
                tensor,
                tile: shape_of(tile),
                index,
            },
            padding,
        })
    }

    pub fn bin(&mut self, op: BinaryOp, a: TileValue, b: TileValue) -> TileValue {
        self.def(Op::Binary(op, a, b))
    }

    pub fn un(&mut self, op: UnaryOp, a: TileValue) -> TileValue {
        self.def(Op::Unary(op, a))
    }

    pub fn cmp(&mut self, op: CmpOp, a: TileValue, b: TileValue) -> TileValue {
        self.def(Op::Compare(op, a, b))
    }

    pub fn reshape(&mut self, v: TileValue, shape: &[u32]) -> TileValue {
        self.def(Op::Reshape {
            value: v,
            shape: shape_of(shape),
        })
    }

    pub fn broadcast(&mut self, v: TileValue, shape: &[u32]) -> TileValue {
        self.def(Op::Broadcast {
            value: v,
            shape: shape_of(shape),
        })
    }

    /// A rank-0 `v` as a tile of `shape` (reshape to all ones, then broadcast).
    pub fn splat(&mut self, v: TileValue, shape: &[u32]) -> TileValue {
        let ones = vec![1; shape.len()];
        let r = self.reshape(v, &ones);
        self.broadcast(r, shape)
    }

    pub fn reduce(&mut self, v: TileValue, axis: u32, combine: Combine) -> TileValue {
        self.def(Op::Reduce {
            value: v,
            axis,
            combine,
        })
    }

    /// A reduce closure `|a, b| body(a, b)` over elements of `ty`.
    pub fn closure(
        &mut self,
        ty: ScalarType,
        identity: Literal,
        body: impl FnOnce(&mut Tk, TileValue, TileValue) -> TileValue,
    ) -> Combine {
        let a = self.b.value(TileType::scalar(ty));
        let b = self.b.value(TileType::scalar(ty));
        self.b.begin_block();
        let out = body(self, a, b);
        let body = self.b.end_block(vec![out]);
        Combine::Closure {
            a,
            b,
            body,
            identity,
        }
    }

    pub fn store(&mut self, tensor: u32, value: TileValue) {
        self.b.push(Stmt::Store { tensor, value });
    }

    pub fn push(&mut self, s: Stmt) {
        self.b.push(s);
    }

    /// A block built by `f`, yielding what it returns.
    pub fn block(&mut self, f: impl FnOnce(&mut Tk) -> Vec<TileValue>) -> Block {
        self.b.begin_block();
        let yields = f(self);
        self.b.end_block(yields)
    }

    pub fn finish(self) -> TileKernel {
        let k = self.b.finish();
        cuprum_tile_ir::validate_kernel(&k).unwrap_or_else(|e| panic!("{e}"));
        k
    }
}

/// A device, with its default stream.
pub struct Dev {
    pub ctx: CudaContext,
    pub stream: Stream,
}

/// The device `CudaContext::new(0)` picks (`CUPRUM_DEVICE`; the emulator when there is no
/// GPU).
pub fn dev() -> Dev {
    let ctx = CudaContext::new(0).unwrap_or_else(|e| panic!("no device for the tests: {e}"));
    let stream = ctx.default_stream();
    Dev { ctx, stream }
}

/// A fresh emulator, for tests of what only it reports (typed trap errors, captured
/// prints): a trap on a GPU would leave the context of every test of the binary unusable.
pub fn emu() -> Dev {
    let ctx = CudaContext::emulator();
    let stream = ctx.default_stream();
    Dev { ctx, stream }
}

/// A lowered, optimized kernel loaded on a device.
pub struct Compiled {
    pub tile: TileKernel,
    pub lowered: Lowered,
    pub module: LoadedModule,
}

/// Lowers `tile` with `options`, optimizes and validates the kernel IR, and loads it.
pub fn compile_with(dev: &Dev, tile: &TileKernel, options: &LowerOptions) -> Compiled {
    compile_as(dev, tile, options, true)
}

/// Lowers `tile` with `options`, optimizes the kernel IR when `optimize`, validates it and
/// loads it.
pub fn compile_as(
    dev: &Dev,
    tile: &TileKernel,
    options: &LowerOptions,
    optimize: bool,
) -> Compiled {
    let mut lowered = lower_with(tile, options).unwrap_or_else(|e| panic!("{e}"));
    cuprum_ir::validate_kernel(&lowered.kernel).unwrap_or_else(|e| panic!("{e}"));
    if optimize {
        cuprum_opt::optimize_kernel(&mut lowered.kernel);
        cuprum_ir::validate_kernel(&lowered.kernel).unwrap_or_else(|e| panic!("{e}"));
    }
    let module = LoadedModule::load(
        &dev.ctx,
        Arc::new(Module {
            kernels: vec![lowered.kernel.clone()],
        }),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Compiled {
        tile: tile.clone(),
        lowered,
        module,
    }
}

/// Lowers `tile` with `warps` warps per block (`None`: the lowering's choice).
pub fn compile_warps(dev: &Dev, tile: &TileKernel, warps: Option<u32>) -> Compiled {
    let options = LowerOptions {
        num_warps: warps,
        ..LowerOptions::default()
    };
    compile_with(dev, tile, &options)
}

pub fn compile(dev: &Dev, tile: &TileKernel) -> Compiled {
    compile_with(dev, tile, &LowerOptions::default())
}

/// A tensor on the device: its allocation and the view (offset, shape, strides, in
/// elements) the kernel sees.
pub struct Tensor<T: DeviceCopy> {
    pub buf: DeviceBuffer<T>,
    pub offset: i64,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
}

impl<T: DeviceCopy> Tensor<T> {
    /// A row-major tensor of `shape` holding `data`.
    pub fn new(dev: &Dev, data: &[T], shape: &[usize]) -> Self {
        let strides = row_major(shape);
        Self::view(dev, data, 0, shape, &strides)
    }

    /// A view of `shape` and `strides` at `offset` into an allocation holding `data`.
    pub fn view(dev: &Dev, data: &[T], offset: i64, shape: &[usize], strides: &[i64]) -> Self {
        Self {
            buf: DeviceBuffer::from_host(&dev.stream, data).unwrap_or_else(|e| panic!("{e}")),
            offset,
            shape: shape.iter().map(|&n| n as i64).collect(),
            strides: strides.to_vec(),
        }
    }

    pub fn to_host(&self, dev: &Dev) -> Vec<T> {
        self.buf
            .to_host_vec(&dev.stream)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn arg(&self) -> Arg {
        Arg::Tensor {
            slice: KernelArg::Slice {
                address: self.buf.device_address(),
                len: self.buf.len() as u64,
            },
            offset: self.offset,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
        }
    }
}

pub fn row_major(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1] as i64;
    }
    s
}

/// One tile-kernel argument.
pub enum Arg {
    Tensor {
        slice: KernelArg,
        offset: i64,
        shape: Vec<i64>,
        strides: Vec<i64>,
    },
    Scalar(KernelArg),
}

/// The facts of `args` for `tile`, as a launch computes them.
pub fn facts_of(tile: &TileKernel, args: &[Arg]) -> Vec<cuprum_tile_lower::TensorFacts> {
    cuprum_tile_lower::access_extents(tile)
        .iter()
        .zip(args)
        .map(|(extents, arg)| match arg {
            Arg::Tensor {
                slice: cuprum_runtime::KernelArg::Slice { address, .. },
                offset,
                shape,
                strides,
            } => cuprum_tile_lower::TensorFacts::of(
                4,
                *address,
                *offset as u64,
                &shape.iter().map(|&n| n as u64).collect::<Vec<_>>(),
                strides,
                extents,
            ),
            _ => cuprum_tile_lower::TensorFacts::default(),
        })
        .collect()
}

pub fn scalar<T: DeviceScalar>(v: T) -> Arg {
    Arg::Scalar(KernelArg::scalar(v))
}

/// The grid the tile IR's semantics give: from the partitioned tensors (ceiling division of
/// their shapes by their tiles, which must agree), else `explicit`.
pub fn grid_of(
    tile: &TileKernel,
    args: &[Arg],
    explicit: Option<(u32, u32, u32)>,
) -> (u32, u32, u32) {
    if let Some(g) = explicit {
        return g;
    }
    let mut grid: Option<(u32, u32, u32)> = None;
    for (p, a) in tile.params.iter().zip(args) {
        let (ParamKind::Tensor(t), Arg::Tensor { shape, .. }) = (&p.kind, a) else {
            continue;
        };
        let Some(tile_shape) = t.partition_tile() else {
            continue;
        };
        let mut g = [1u32; 3];
        for (d, (n, td)) in shape.iter().zip(&tile_shape).enumerate() {
            let td = i64::from(td.known().expect("specialized"));
            g[d] = (*n as u64).div_ceil(td as u64).max(1) as u32;
        }
        let g = (g[0], g[1], g[2]);
        if let Some(prev) = grid {
            assert_eq!(prev, g, "partitioned tensors give different grids");
        }
        grid = Some(g);
    }
    grid.expect("a kernel without partitioned tensors needs an explicit grid")
}

/// Launches `c` with `args` (one per tile parameter) on the grid the partitions give.
pub fn launch(dev: &Dev, c: &Compiled, args: &[Arg]) -> Result<(), Error> {
    launch_grid(dev, c, args, None)
}

pub fn launch_grid(
    dev: &Dev,
    c: &Compiled,
    args: &[Arg],
    grid: Option<(u32, u32, u32)>,
) -> Result<(), Error> {
    assert_eq!(
        args.len(),
        c.tile.params.len(),
        "one argument per parameter"
    );
    let mut kargs = Vec::new();
    for slot in &c.lowered.args {
        let i64arg = |v: i64| KernelArg::Scalar {
            ty: ScalarType::I64,
            bits: v as u64,
        };
        let k = match (*slot, &args) {
            (ArgSlot::Scalar { param }, _) => match &args[param as usize] {
                Arg::Scalar(k) => *k,
                Arg::Tensor { .. } => panic!("parameter {param} is a scalar"),
            },
            (ArgSlot::TensorData { param }, _)
            | (ArgSlot::TensorOffset { param }, _)
            | (ArgSlot::TensorDim { param, .. }, _)
            | (ArgSlot::TensorStride { param, .. }, _) => {
                let Arg::Tensor {
                    slice,
                    offset,
                    shape,
                    strides,
                } = &args[param as usize]
                else {
                    panic!("parameter {param} is a tensor")
                };
                match *slot {
                    ArgSlot::TensorData { .. } => *slice,
                    ArgSlot::TensorOffset { .. } => i64arg(*offset),
                    ArgSlot::TensorDim { axis, .. } => i64arg(shape[axis as usize]),
                    ArgSlot::TensorStride { axis, .. } => i64arg(strides[axis as usize]),
                    ArgSlot::Scalar { .. } | ArgSlot::TensorMap { .. } => unreachable!(),
                }
            }
            (ArgSlot::TensorMap { param, .. }, _) => {
                panic!(
                    "parameter {param}: these tests lower for any device, which takes no tensor maps"
                )
            }
        };
        kargs.push(k);
    }
    let config = LaunchConfig {
        grid_dim: {
            let (x, y, z) = grid_of(&c.tile, args, grid);
            let [x, y, z] = c
                .lowered
                .blocks
                .grid([x, y, z], 2)
                .expect("the tests' grids are small");
            (x, y, z)
        },
        block_dim: (c.lowered.block_threads, 1, 1),
        shared_mem_bytes: c.lowered.shared_bytes,
    };
    // SAFETY: every slice argument is a live buffer of this context whose element type is
    // the parameter's (the tests build both from the same Rust type), outputs alias no
    // input, and the lowered kernel's accesses stay inside each tensor's elements, which
    // the tests place inside their allocations (the emulator checks every access).
    unsafe { c.module.launch(&dev.stream, 0, &config, &kargs) }?;
    dev.stream.synchronize()
}

/// Float comparison within `tol` relative to each expected value, every element (NaN
/// equals NaN).
pub fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * w.abs();
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// Global-memory accesses of a kernel, counted statically over every branch.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Accesses {
    /// Scalar global loads.
    pub loads: usize,
    /// Vector global loads, by width.
    pub vector_loads: Vec<usize>,
    /// Scalar global stores.
    pub stores: usize,
    /// Vector global stores, by width.
    pub vector_stores: Vec<usize>,
    /// Scalar shared-memory loads and stores.
    pub shared: usize,
    /// Vector shared-memory loads and stores, by width.
    pub vector_shared: Vec<usize>,
    /// Barriers.
    pub barriers: usize,
}

pub fn accesses(kernel: &cuprum_ir::Kernel) -> Accesses {
    use cuprum_ir::{AddressSpace as S, Op as IOp, Stmt as IStmt};
    let mut a = Accesses::default();
    kernel.body.visit(&mut |s| match s {
        IStmt::Def {
            op: IOp::Load { space, .. },
            ..
        } => match space {
            S::Global => a.loads += 1,
            S::Shared => a.shared += 1,
            S::Local => {}
        },
        IStmt::Store { space, .. } => match space {
            S::Global => a.stores += 1,
            S::Shared => a.shared += 1,
            S::Local => {}
        },
        IStmt::VectorLoad {
            space: S::Global,
            d,
            ..
        } => a.vector_loads.push(d.len()),
        IStmt::VectorStore {
            space: S::Global,
            values,
            ..
        } => a.vector_stores.push(values.len()),
        IStmt::VectorLoad {
            space: S::Shared,
            d,
            ..
        } => a.vector_shared.push(d.len()),
        IStmt::VectorStore {
            space: S::Shared,
            values,
            ..
        } => a.vector_shared.push(values.len()),
        IStmt::Barrier => a.barriers += 1,
        _ => {}
    });
    a
}
