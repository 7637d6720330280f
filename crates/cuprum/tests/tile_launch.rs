//! The tile launch path on hand-built tile kernels, without the macro or the front end: the
//! checks that refuse bad launches before anything runs, the specialization from partitions,
//! shapes, element types and `.generics(..)`, and the whole path (specialize → lower →
//! optimize → load → launch) through a lowering written here for one kernel, `axpy`
//! (`z = a * x + y` on tiles), which follows `cuprum_tile_lower`'s launch contract: its
//! kernel IR parameters come in an order of its own choosing, so the arguments must follow
//! `Lowered::args`. The real lowering replaces it once it lands; the default path is checked
//! to reach it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuprum::CudaContext;
use cuprum::tile::__private::{EmbeddedModule, Entry, Launcher, Lowering};
use cuprum::tile::cuda_async::device_operation::{DeviceOp, IntoDeviceOp, value};
use cuprum::tile::error::{Error, LaunchProblem};
use cuprum::tile::prelude::*;
use cuprum::tile::tile_kernel::TileKernel as _;
use cuprum_ir::{
    AddressSpace, BinaryOp, Block, CmpOp, Constant, Dim as IrDim, KernelBuilder, Op as IrOp,
    ParamKind as IrParam, ScalarType, SliceAccess, Special, Stmt as IrStmt, Value as IrValue,
};
use cuprum_testkit::compare::{assert_same, ok};
use cuprum_testkit::random::{random, rng};
use cuprum_tile_ir::{
    BinaryOp as TileBinary, Dim, Elem, Literal, Op, ParamKind, Stmt, TensorAccess, TensorDim,
    TensorParam, TileBuilder, TileKernel, TileModule, View, encode_module,
};
use cuprum_tile_lower::{ArgSlot, LowerError, LowerOptions, Lowered};

/// A fresh context (its own counters) and a stream on it.
fn fresh() -> (CudaContext, Stream) {
    let ctx = ok(CudaContext::new(0));
    let stream = ok(ctx.new_stream());
    (ctx, stream)
}

fn tensor(elem: Elem, dims: Vec<TensorDim>, access: TensorAccess) -> ParamKind {
    ParamKind::Tensor(TensorParam { elem, dims, access })
}

fn def(b: &mut TileBuilder, op: Op) -> cuprum_tile_ir::TileValue {
    match b.def(op) {
        Ok(v) => v,
        Err(e) => panic!("ill-typed test kernel: {e}"),
    }
}

/// `axpy<const B: [i32; rank], T>(z: &mut Tensor<T, B>, a: T, x: &Tensor<T, {[-1; rank]}>,
/// y: &Tensor<T, {[-1; rank]}>)`: `z.store(a * load_tile_like(x, z) + load_tile_like(y, z))`.
fn axpy_kernel(rank: usize) -> TileKernel {
    let mut b = TileBuilder::new("axpy");
    let consts: Vec<u32> = (0..rank)
        .map(|i| b.const_param(format!("B[{i}]"), ScalarType::I32))
        .collect();
    let t = Elem::Param(b.type_param("T"));
    let tile: Vec<Dim> = consts.iter().map(|&c| Dim::Param(c)).collect();
    let z = b.param(
        "z",
        tensor(
            t,
            tile.iter().map(|&d| TensorDim::Static(d)).collect(),
            TensorAccess::Partitioned,
        ),
    );
    let a = b.param("a", ParamKind::Scalar(t));
    let read = |b: &mut TileBuilder, name: &str| {
        b.param(
            name,
            tensor(t, vec![TensorDim::Dynamic; rank], TensorAccess::Read),
        )
    };
    let x = read(&mut b, "x");
    let y = read(&mut b, "y");
    let index: Vec<_> = (0..rank as u32)
        .map(|axis| def(&mut b, Op::BlockId(axis)))
        .collect();
    let load = |b: &mut TileBuilder, tensor: u32| {
        def(
            b,
            Op::Load {
                view: View::Tiled {
                    tensor,
                    tile: tile.clone(),
                    index: index.clone(),
                },
                padding: Literal::Int(0),
            },
        )
    };
    let tx = load(&mut b, x);
    let ty = load(&mut b, y);
    let ta = def(&mut b, Op::Param(a));
    let ta = def(
        &mut b,
        Op::Reshape {
            value: ta,
            shape: vec![Dim::Known(1); rank],
        },
    );
    let ta = def(
        &mut b,
        Op::Broadcast {
            value: ta,
            shape: tile.clone(),
        },
    );
    let ax = def(&mut b, Op::Binary(TileBinary::Mul, ta, tx));
    let sum = def(&mut b, Op::Binary(TileBinary::Add, ax, ty));
    b.push(Stmt::Store {
        tensor: z,
        value: sum,
    });
    b.finish()
}

/// `count<const K: i32>(out: &mut Tensor<i32, {[4]}>)`: `K` sizes nothing, so only
/// `.generics(..)` gives it.
fn unbound_kernel() -> TileKernel {
    let mut b = TileBuilder::new("count");
    let k = b.const_param("K", ScalarType::I32);
    let out = b.param(
        "out",
        tensor(
            Elem::Known(ScalarType::I32),
            vec![TensorDim::Static(Dim::Known(4))],
            TensorAccess::Partitioned,
        ),
    );
    let kv = def(&mut b, Op::ConstParam(k));
    let kv = def(
        &mut b,
        Op::Reshape {
            value: kv,
            shape: vec![Dim::Known(1)],
        },
    );
    let kv = def(
        &mut b,
        Op::Broadcast {
            value: kv,
            shape: vec![Dim::Known(4)],
        },
    );
    b.push(Stmt::Store {
        tensor: out,
        value: kv,
    });
    b.finish()
}

/// `hello()`: no parameters, so no grid but `.grid(..)`'s.
fn hello_kernel() -> TileKernel {
    TileBuilder::new("hello").finish()
}

/// A launcher entry for `kernel`, embedded as the macro embeds a module, with the generic
/// parameters in the order `generics` gives.
fn entry(kernel: TileKernel, generics: &[&'static str]) -> &'static Entry {
    let bytes: &'static [u8] = Box::leak(
        encode_module(&TileModule {
            kernels: vec![kernel],
        })
        .into_boxed_slice(),
    );
    let module: &'static EmbeddedModule = Box::leak(Box::new(EmbeddedModule::new("test", bytes)));
    let generics: &'static [&'static str] = Box::leak(generics.to_vec().into_boxed_slice());
    Box::leak(Box::new(Entry {
        module,
        index: 0,
        generics,
        print_ir: false,
        hints: &[],
    }))
}

fn axpy_entry(rank: usize) -> &'static Entry {
    match rank {
        1 => entry(axpy_kernel(1), &["B[0]", "T"]),
        _ => entry(axpy_kernel(2), &["B[0]", "B[1]", "T"]),
    }
}

/// Launches `axpy` lowered by `lowering`.
#[allow(clippy::type_complexity)]
fn axpy<Z, A, X, Y, ZV, AV, XV, YV>(
    entry: &'static Entry,
    lowering: Lowering,
    z: Z,
    a: A,
    x: X,
    y: Y,
) -> Launcher<(Z::Op, A::Op, X::Op, Y::Op)>
where
    Z: IntoDeviceOp<ZV>,
    A: IntoDeviceOp<AV>,
    X: IntoDeviceOp<XV>,
    Y: IntoDeviceOp<YV>,
    ZV: Send,
    AV: Send,
    XV: Send,
    YV: Send,
{
    Launcher::new(entry, (z.into_op(), a.into_op(), x.into_op(), y.into_op()))
        .with_lowering(lowering)
}

// ---- The lowering written for `axpy` ---------------------------------------------------

fn ir(b: &mut KernelBuilder, op: IrOp) -> IrValue {
    match b.def(op) {
        Ok(v) => v,
        Err(e) => panic!("ill-typed lowered kernel: {e}"),
    }
}

/// One tensor's kernel IR parameters.
struct TensorParams {
    data: u32,
    offset: u32,
    dims: Vec<u32>,
    strides: Vec<u32>,
}

/// How many times [`lower_axpy`] ran, per test lowering name.
static LOWERED: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

fn lower_axpy_counted(kernel: &TileKernel, _: &LowerOptions) -> Result<Lowered, LowerError> {
    LOWERED[1].fetch_add(1, Ordering::SeqCst);
    lower_axpy(kernel)
}

fn lower_axpy_plain(kernel: &TileKernel, _: &LowerOptions) -> Result<Lowered, LowerError> {
    LOWERED[0].fetch_add(1, Ordering::SeqCst);
    lower_axpy(kernel)
}

const AXPY: Lowering = Lowering {
    name: "test: axpy",
    lower: lower_axpy_plain,
};

/// `axpy` with one thread per tile element. Parameters: each tensor's sizes, strides, offset
/// and data, then the scalar (not the tile kernel's order).
fn lower_axpy(kernel: &TileKernel) -> Result<Lowered, LowerError> {
    let unsupported = |message: &str| LowerError::Unsupported {
        kernel: kernel.name.clone(),
        message: message.into(),
    };
    let ParamKind::Tensor(z) = &kernel.params[0].kind else {
        return Err(unsupported("z is not a tensor"));
    };
    let (Elem::Known(ty), Some(tile)) = (z.elem, z.partition_tile()) else {
        return Err(unsupported("not specialized"));
    };
    let tile: Vec<u32> = tile.iter().filter_map(|d| d.known()).collect();
    let rank = tile.len();
    let threads: u32 = tile.iter().product();
    let mut b = KernelBuilder::new("axpy");
    let mut slots = Vec::new();
    let mut tensors = Vec::new();
    for (p, access) in [
        (0u32, SliceAccess::ReadWrite),
        (2, SliceAccess::ReadOnly),
        (3, SliceAccess::ReadOnly),
    ] {
        let mut dims = Vec::new();
        let mut strides = Vec::new();
        for axis in 0..rank as u32 {
            dims.push(b.param(format!("d{p}_{axis}"), IrParam::Scalar(ScalarType::I64)));
            slots.push(ArgSlot::TensorDim { param: p, axis });
        }
        for axis in 0..rank as u32 {
            strides.push(b.param(format!("s{p}_{axis}"), IrParam::Scalar(ScalarType::I64)));
            slots.push(ArgSlot::TensorStride { param: p, axis });
        }
        let offset = b.param(format!("o{p}"), IrParam::Scalar(ScalarType::I64));
        slots.push(ArgSlot::TensorOffset { param: p });
        let data = b.param(format!("t{p}"), IrParam::Slice { elem: ty, access });
        slots.push(ArgSlot::TensorData { param: p });
        tensors.push(TensorParams {
            data,
            offset,
            dims,
            strides,
        });
    }
    let a_param = b.param("a", IrParam::Scalar(ty));
    slots.push(ArgSlot::Scalar { param: 1 });

    // The element of the tile this thread computes, in tensor coordinates.
    let tid = ir(&mut b, IrOp::Special(Special::ThreadIdx(IrDim::X)));
    let tid = ir(
        &mut b,
        IrOp::Cast {
            value: tid,
            to: ScalarType::I64,
        },
    );
    let mut coords = Vec::new();
    let mut rest = tid;
    for axis in (0..rank).rev() {
        let size = b.constant(Constant::i64(i64::from(tile[axis])));
        let within = ir(&mut b, IrOp::Binary(BinaryOp::Rem, rest, size));
        rest = ir(&mut b, IrOp::Binary(BinaryOp::Div, rest, size));
        let block_dim = [IrDim::X, IrDim::Y, IrDim::Z][axis];
        let block = ir(&mut b, IrOp::Special(Special::BlockIdx(block_dim)));
        let block = ir(
            &mut b,
            IrOp::Cast {
                value: block,
                to: ScalarType::I64,
            },
        );
        let base = ir(&mut b, IrOp::Binary(BinaryOp::Mul, block, size));
        coords.push(ir(&mut b, IrOp::Binary(BinaryOp::Add, base, within)));
    }
    coords.reverse();
    // Whether the element lies inside tensor `t`, and its address there.
    let inside = |b: &mut KernelBuilder, t: &TensorParams| {
        let mut all = b.constant(Constant::bool(true));
        for (c, &d) in coords.iter().zip(&t.dims) {
            let dim = ir(b, IrOp::Param(d));
            let lt = ir(b, IrOp::Compare(CmpOp::Lt, *c, dim));
            all = ir(b, IrOp::Binary(BinaryOp::And, all, lt));
        }
        all
    };
    let address = |b: &mut KernelBuilder, t: &TensorParams| {
        let mut at = ir(b, IrOp::Param(t.offset));
        for (c, &s) in coords.iter().zip(&t.strides) {
            let stride = ir(b, IrOp::Param(s));
            let step = ir(b, IrOp::Binary(BinaryOp::Mul, *c, stride));
            at = ir(b, IrOp::Binary(BinaryOp::Add, at, step));
        }
        let at = ir(
            b,
            IrOp::Cast {
                value: at,
                to: ScalarType::U64,
            },
        );
        let size = b.constant(Constant::u64(u64::from(ty.size_bytes())));
        let bytes = ir(b, IrOp::Binary(BinaryOp::Mul, at, size));
        let base = ir(b, IrOp::SliceBase(t.data));
        ir(b, IrOp::Binary(BinaryOp::Add, base, bytes))
    };
    // Loads of x and y read 0 outside them.
    let mut loaded = Vec::new();
    for (k, t) in tensors[1..].iter().enumerate() {
        let var = b.var(format!("v{k}"), ty);
        let zero = b.constant(Constant::new(ty, 0));
        b.push(IrStmt::WriteVar { var, value: zero });
        let cond = inside(&mut b, t);
        b.begin_block();
        let addr = address(&mut b, t);
        let v = ir(
            &mut b,
            IrOp::Load {
                space: AddressSpace::Global,
                ty,
                addr,
                eviction: cuprum_ir::Eviction::Normal,
            },
        );
        b.push(IrStmt::WriteVar { var, value: v });
        let then = b.end_block();
        b.push(IrStmt::If {
            cond,
            then,
            otherwise: Block::default(),
        });
        loaded.push(ir(&mut b, IrOp::ReadVar(var)));
    }
    let cond = inside(&mut b, &tensors[0]);
    b.begin_block();
    let a = ir(&mut b, IrOp::Param(a_param));
    let ax = ir(&mut b, IrOp::Binary(BinaryOp::Mul, a, loaded[0]));
    let sum = ir(&mut b, IrOp::Binary(BinaryOp::Add, ax, loaded[1]));
    let addr = address(&mut b, &tensors[0]);
    b.push(IrStmt::Store {
        space: AddressSpace::Global,
        addr,
        value: sum,
    });
    let then = b.end_block();
    b.push(IrStmt::If {
        cond,
        then,
        otherwise: Block::default(),
    });
    Ok(Lowered {
        kernel: b.finish(),
        block_threads: threads,
        shared_bytes: 0,
        args: slots,
        blocks: cuprum_tile_lower::BlockCount::PerTile,
    })
}

// ---- Launches that run --------------------------------------------------------------------

#[test]
fn axpy_runs_through_the_whole_launch_path() {
    let (ctx, s) = fresh();
    let mut r = rng("axpy_runs_through_the_whole_launch_path");

    // Rank 1, f32, an edge tile (1000 = 7 * 128 + 104).
    let n = 1000;
    let x: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let y: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let a: f32 = random(&mut r, 1, -4.0, 4.0)[0];
    let poison = vec![f32::from_bits(0x7FC0_DEAD); n];
    let launch = axpy(
        axpy_entry(1),
        AXPY,
        api::from_host(&poison, &[n]).partition([128]),
        a,
        api::from_host(&x, &[n]),
        api::from_host(&y, &[n]),
    );
    assert_eq!(ctx.stats().launches, 0);
    let (z, a_back, x_back, _y) = ok(launch.sync_on(&s));
    assert_eq!(ctx.stats().launches, 1);
    assert_eq!(a_back, a);
    assert_eq!(x_back.shape(), &[n]);
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    assert_same(
        "axpy f32",
        &ok(z.unpartition().to_host_vec().sync_on(&s)),
        &want,
    );

    // Rank 2, f64, edge tiles on both axes: (37, 50) in tiles (8, 16) is a (5, 4) grid.
    let (m, k) = (37, 50);
    let x: Vec<f64> = random(&mut r, m * k, -1e3, 1e3);
    let y: Vec<f64> = random(&mut r, m * k, -1e3, 1e3);
    let a: f64 = random(&mut r, 1, -4.0, 4.0)[0];
    let x_t: Arc<Tensor<f64>> = ok(api::from_host(&x, &[m, k]).sync_on(&s)).into();
    let y_t = ok(api::from_host(&y, &[m, k]).sync_on(&s));
    let z = ok(api::full(f64::NAN, &[m, k]).sync_on(&s)).partition([8, 16]);
    let (z, _, x_back, y_back) = ok(axpy(axpy_entry(2), AXPY, z, a, x_t.clone(), &y_t).sync_on(&s));
    assert!(
        Arc::ptr_eq(&x_back, &x_t),
        "an Arc input comes back as itself"
    );
    assert!(
        std::ptr::eq(y_back, &y_t),
        "a borrowed input comes back as itself"
    );
    let want: Vec<f64> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    assert_same(
        "axpy f64",
        &ok(z.unpartition().to_host_vec().sync_on(&s)),
        &want,
    );
    assert_eq!(ctx.stats().launches, 2);
}

#[test]
fn a_borrowed_partition_is_written_in_place() {
    let (_ctx, s) = fresh();
    let mut r = rng("a_borrowed_partition_is_written_in_place");
    let n = 300;
    let x: Vec<i32> = random(&mut r, n, -1000, 1000);
    let y: Vec<i32> = random(&mut r, n, -1000, 1000);
    let mut z = ok(api::full(i32::MIN, &[n]).sync_on(&s));
    let x_t = ok(api::from_host(&x, &[n]).sync_on(&s));
    let y_t = ok(api::from_host(&y, &[n]).sync_on(&s));
    ok(axpy(
        axpy_entry(1),
        AXPY,
        (&mut z).partition([64]),
        3i32,
        &x_t,
        &y_t,
    )
    .sync_on(&s));
    let want: Vec<i32> = x.iter().zip(&y).map(|(x, y)| 3 * x + y).collect();
    assert_same("in place", &ok((&z).to_host_vec().sync_on(&s)), &want);
}

#[test]
fn each_specialization_is_compiled_once() {
    let (_ctx, s) = fresh();
    let counted = Lowering {
        name: "test: axpy, counted",
        lower: lower_axpy_counted,
    };
    let entry = axpy_entry(1);
    let run = |tile: usize, n: usize| {
        let launch = axpy(
            entry,
            counted,
            api::zeros::<f32>(&[n]).partition([tile]),
            1.0f32,
            api::ones::<f32>(&[n]),
            api::ones::<f32>(&[n]),
        );
        let (z, ..) = ok(launch.sync_on(&s));
        assert_same(
            "1 * 1 + 1",
            &ok(z.unpartition().to_host_vec().sync_on(&s)),
            &vec![2.0; n],
        );
    };
    let before = LOWERED[1].load(Ordering::SeqCst);
    run(32, 100);
    run(32, 1000);
    run(32, 7);
    assert_eq!(
        LOWERED[1].load(Ordering::SeqCst),
        before + 1,
        "one tile, one compile"
    );
    // Sizes the tile divides are one more: their tiles are whole or absent (the launch's
    // tensor facts are part of the key).
    run(32, 64);
    run(32, 96);
    assert_eq!(LOWERED[1].load(Ordering::SeqCst), before + 2);
    run(16, 100);
    assert_eq!(LOWERED[1].load(Ordering::SeqCst), before + 3);
    // Another element type is another specialization.
    let (z, ..) = ok(axpy(
        entry,
        counted,
        api::zeros::<f64>(&[10]).partition([16]),
        2.0f64,
        api::ones::<f64>(&[10]),
        api::full(0.5f64, &[10]),
    )
    .sync_on(&s));
    assert_same(
        "f64",
        &ok(z.unpartition().to_host_vec().sync_on(&s)),
        &[2.5; 10],
    );
    assert_eq!(LOWERED[1].load(Ordering::SeqCst), before + 4);
}

#[test]
fn explicit_generics_must_agree_with_the_arguments() {
    let (ctx, s) = fresh();
    let entry = axpy_entry(1);
    let make = || {
        axpy(
            entry,
            AXPY,
            api::zeros::<f32>(&[64]).partition([32]),
            1.0f32,
            api::ones::<f32>(&[64]),
            api::ones::<f32>(&[64]),
        )
    };
    let (z, ..) = ok(make().generics(["32", "f32"]).sync_on(&s));
    assert_same(
        "generics",
        &ok(z.unpartition().to_host_vec().sync_on(&s)),
        &[2.0; 64],
    );
    let launches = ctx.stats().launches;
    match problem(make().generics(["64", "f32"]).sync_on(&s)) {
        LaunchProblem::GenericConflict {
            name,
            first,
            second,
        } => {
            assert_eq!(name, "B[0]");
            assert_eq!(first, "64 from `.generics(..)`");
            assert_eq!(second, "32 from the partition of `z`");
        }
        other => panic!("expected a conflict, got {other}"),
    }
    match problem(make().generics(["32", "f64"]).sync_on(&s)) {
        LaunchProblem::ElementType { param, given, .. } => {
            assert_eq!((param.as_str(), given), ("z", ScalarType::F32))
        }
        other => panic!("expected an element type error, got {other}"),
    }
    assert!(matches!(
        problem(make().generics(["32"]).sync_on(&s)),
        LaunchProblem::GenericCount { given: 1, .. }
    ));
    assert!(matches!(
        problem(make().generics(["thirty-two", "f32"]).sync_on(&s)),
        LaunchProblem::GenericValue {
            expected: "an integer",
            ..
        }
    ));
    assert!(matches!(
        problem(make().generics(["32", "float"]).sync_on(&s)),
        LaunchProblem::GenericValue { .. }
    ));
    assert_eq!(ctx.stats().launches, launches, "a refused launch ran");

    // A const no argument determines needs `.generics(..)`.
    let count = entry_of_count();
    let out = || api::zeros::<i32>(&[4]).partition([4]);
    match problem(Launcher::new(count, (out(),)).sync_on(&s)) {
        LaunchProblem::GenericUnbound { names } => assert_eq!(names, ["K"]),
        other => panic!("expected an unbound generic, got {other}"),
    }
    // With it, the launch reaches the lowering (not written yet in this tree: the stub's
    // error names the specialization).
    match Launcher::new(count, (out(),)).generics(["5"]).sync_on(&s) {
        Err(Error::Compile { specialization, .. }) => assert_eq!(specialization, "K = 5"),
        Err(Error::InvalidLaunch { problem, .. }) => panic!("refused: {problem}"),
        // The real lowering: the kernel stores K everywhere.
        Err(other) => panic!("unexpected error: {other}"),
        Ok((out,)) => assert_same(
            "count",
            &ok(out.unpartition().to_host_vec().sync_on(&s)),
            &[5; 4],
        ),
    }
}

/// Why a launch was refused.
fn problem<T>(r: Result<T, Error>) -> LaunchProblem {
    match r {
        Err(Error::InvalidLaunch { problem, .. }) => problem,
        Err(other) => panic!("expected an invalid launch, got {other}"),
        Ok(_) => panic!("expected an invalid launch, got a launch"),
    }
}

fn entry_of_count() -> &'static Entry {
    entry(unbound_kernel(), &["K"])
}

#[test]
fn the_default_lowering_is_reached() {
    let (ctx, s) = fresh();
    let launch = Launcher::new(
        axpy_entry(1),
        (
            api::zeros::<f32>(&[256]).partition([128]),
            value(2.0f32),
            api::ones::<f32>(&[256]),
            api::ones::<f32>(&[256]),
        ),
    );
    match launch.sync_on(&s) {
        // The stub lowering of this tree refuses with its message.
        Err(Error::Compile {
            kernel,
            specialization,
            message,
        }) => {
            assert_eq!(kernel, "axpy");
            assert_eq!(specialization, "B[0] = 128, T = f32");
            assert!(!message.is_empty());
            assert_eq!(ctx.stats().launches, 0);
        }
        Err(other) => panic!("unexpected error: {other}"),
        // The real lowering.
        Ok((z, ..)) => assert_same(
            "axpy",
            &ok(z.unpartition().to_host_vec().sync_on(&s)),
            &[3.0; 256],
        ),
    }
}

// ---- Launches refused before anything runs ----------------------------------------------

/// Runs `launch` and returns why it was refused, checking that no kernel ran.
fn refused<O: std::fmt::Debug>(
    ctx: &CudaContext,
    launch: impl DeviceOp<Output = O>,
    s: &Stream,
) -> LaunchProblem {
    let before = ctx.stats().launches;
    let result = launch.sync_on(s);
    assert_eq!(
        ctx.stats().launches,
        before,
        "a refused launch ran a kernel"
    );
    match result {
        Err(Error::InvalidLaunch { problem, .. }) => {
            // Every refusal has a message a user can act on.
            assert!(!problem.to_string().is_empty());
            problem
        }
        other => panic!("expected a refused launch, got {other:?}"),
    }
}

#[test]
fn bad_launches_are_refused_before_anything_runs() {
    let (ctx, s) = fresh();
    let e1 = axpy_entry(1);
    let e2 = axpy_entry(2);
    let ones = |n: usize| api::ones::<f32>(&[n]);

    // A partition whose rank is not its tensor's.
    let p = refused(
        &ctx,
        axpy(
            e2,
            AXPY,
            api::zeros::<f32>(&[8, 8]).partition([4]),
            1.0f32,
            api::ones::<f32>(&[8, 8]),
            api::ones::<f32>(&[8, 8]),
        ),
        &s,
    );
    assert!(matches!(p, LaunchProblem::PartitionRank { .. }), "{p}");

    // A tensor of the wrong rank.
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[8, 8]).partition([4, 4]),
            1.0f32,
            ones(64),
            ones(64),
        ),
        &s,
    );
    assert!(matches!(p, LaunchProblem::Rank { declared: 1, .. }), "{p}");

    // An input of another element type than the output's `T`.
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[64]).partition([32]),
            1.0f32,
            api::ones::<f64>(&[64]),
            ones(64),
        ),
        &s,
    );
    match p {
        LaunchProblem::ElementType { param, given, .. } => {
            assert_eq!((param.as_str(), given), ("x", ScalarType::F64))
        }
        other => panic!("expected an element type error, got {other}"),
    }
    // A scalar of another type.
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[64]).partition([32]),
            1i32,
            ones(64),
            ones(64),
        ),
        &s,
    );
    assert!(matches!(p, LaunchProblem::ElementType { .. }), "{p}");

    // An empty tensor.
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[64]).partition([32]),
            1.0f32,
            ones(0),
            ones(64),
        ),
        &s,
    );
    assert!(matches!(p, LaunchProblem::EmptyTensor { .. }), "{p}");

    // A zero tile size.
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[64]).partition([0]),
            1.0f32,
            ones(64),
            ones(64),
        ),
        &s,
    );
    assert!(matches!(p, LaunchProblem::PartitionTile { .. }), "{p}");

    // Arguments of the wrong kind: an input partitioned, an output not.
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[64]),
            1.0f32,
            ones(64),
            ones(64),
        ),
        &s,
    );
    assert!(matches!(p, LaunchProblem::ArgumentKind { .. }), "{p}");
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[64]).partition([32]),
            ones(1),
            ones(64),
            ones(64),
        ),
        &s,
    );
    assert!(matches!(p, LaunchProblem::ArgumentKind { .. }), "{p}");

    // A tensor of another context.
    let other = ok(CudaContext::new(0));
    let foreign = ok(api::ones::<f32>(&[64]).sync_on(&other.default_stream()));
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[64]).partition([32]),
            1.0f32,
            foreign,
            ones(64),
        ),
        &s,
    );
    match p {
        LaunchProblem::ContextMismatch { param } => assert_eq!(param, "x"),
        other => panic!("expected a context mismatch, got {other}"),
    }

    // An output sharing its allocation with an input (through a reshaped `Arc`).
    let input: Arc<Tensor<f32>> = ok(ones(64).sync_on(&s)).into();
    let alias =
        ok(Arc::try_unwrap(ok((&input).reshape(&[64]))).map_err(|_| "a fresh Arc has one owner"));
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            alias.partition([32]),
            1.0f32,
            input.clone(),
            ones(64),
        ),
        &s,
    );
    match p {
        LaunchProblem::Aliased { output, other } => {
            assert_eq!((output.as_str(), other.as_str()), ("z", "x"))
        }
        other => panic!("expected an alias, got {other}"),
    }

    // A grid that differs from the partition's, or has a zero.
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[64]).partition([32]),
            1.0f32,
            ones(64),
            ones(64),
        )
        .grid((3, 1, 1)),
        &s,
    );
    assert!(
        matches!(
            p,
            LaunchProblem::BadGrid {
                given: (3, 1, 1),
                ..
            }
        ),
        "{p}"
    );
    let p = refused(
        &ctx,
        axpy(
            e1,
            AXPY,
            api::zeros::<f32>(&[64]).partition([32]),
            1.0f32,
            ones(64),
            ones(64),
        )
        .grid((2, 0, 1)),
        &s,
    );
    assert!(matches!(p, LaunchProblem::BadGrid { .. }), "{p}");
    // The same grid is fine.
    let (z, ..) = ok(axpy(
        e1,
        AXPY,
        api::zeros::<f32>(&[64]).partition([32]),
        1.0f32,
        ones(64),
        ones(64),
    )
    .grid((2, 1, 1))
    .sync_on(&s));
    assert_same(
        "grid",
        &ok(z.unpartition().to_host_vec().sync_on(&s)),
        &[2.0; 64],
    );

    // A kernel without partitioned outputs needs `.grid(..)`.
    let hello = entry(hello_kernel(), &[]);
    assert!(matches!(
        refused(&ctx, Launcher::new(hello, ()), &s),
        LaunchProblem::NoGrid
    ));
}

/// `two<const B: i32>(p: &mut Tensor<f32, {[B]}>, q: &mut Tensor<f32, {[4]}>, w:
/// &Tensor<f32, {[B, 3]}>)`: two outputs, a static size and one from a generic.
fn two_outputs_kernel() -> TileKernel {
    let mut b = TileBuilder::new("two");
    let c = b.const_param("B", ScalarType::I32);
    let f32e = Elem::Known(ScalarType::F32);
    let p = b.param(
        "p",
        tensor(
            f32e,
            vec![TensorDim::Static(Dim::Param(c))],
            TensorAccess::Partitioned,
        ),
    );
    let q = b.param(
        "q",
        tensor(
            f32e,
            vec![TensorDim::Static(Dim::Known(4))],
            TensorAccess::Partitioned,
        ),
    );
    b.param(
        "w",
        tensor(
            f32e,
            vec![
                TensorDim::Static(Dim::Param(c)),
                TensorDim::Static(Dim::Known(3)),
            ],
            TensorAccess::Read,
        ),
    );
    for (tensor, tile) in [(p, Dim::Param(c)), (q, Dim::Known(4))] {
        let zero = def(
            &mut b,
            Op::Const {
                value: Literal::Float(0.0),
                elem: f32e,
                shape: vec![tile],
            },
        );
        b.push(Stmt::Store {
            tensor,
            value: zero,
        });
    }
    b.finish()
}

#[test]
fn outputs_shapes_and_static_sizes_must_agree() {
    let (ctx, s) = fresh();
    let two = entry(two_outputs_kernel(), &["B"]);
    let launch = |p: usize, pt: usize, q: usize, qt: usize, w: [usize; 2]| {
        Launcher::new(
            two,
            (
                api::zeros::<f32>(&[p]).partition([pt]),
                api::zeros::<f32>(&[q]).partition([qt]),
                api::zeros::<f32>(&w),
            ),
        )
    };
    // Grids (4) and (3) differ.
    match refused(&ctx, launch(32, 8, 12, 4, [8, 3]), &s) {
        LaunchProblem::GridMismatch {
            first,
            first_grid,
            param,
            grid,
        } => {
            assert_eq!((first.as_str(), param.as_str()), ("p", "q"));
            assert_eq!((first_grid, grid), ((4, 1, 1), (3, 1, 1)));
        }
        other => panic!("expected a grid mismatch, got {other}"),
    }
    // q's tile is fixed at 4.
    match refused(&ctx, launch(32, 8, 32, 8, [8, 3]), &s) {
        LaunchProblem::PartitionTile {
            param, kernel_tile, ..
        } => {
            assert_eq!((param.as_str(), kernel_tile.as_str()), ("q", "[4]"))
        }
        other => panic!("expected a tile misfit, got {other}"),
    }
    // w's second size is fixed at 3.
    assert!(matches!(
        refused(&ctx, launch(32, 8, 16, 4, [8, 2]), &s),
        LaunchProblem::StaticDim {
            axis: 1,
            declared: 3,
            ..
        }
    ));
    // w's first size is B, which p's partition makes 8.
    match refused(&ctx, launch(32, 8, 16, 4, [9, 3]), &s) {
        LaunchProblem::GenericConflict {
            name,
            first,
            second,
        } => {
            assert_eq!(name, "B");
            assert_eq!(first, "8 from the partition of `p`");
            assert_eq!(second, "9 from the shape of `w`");
        }
        other => panic!("expected a conflict, got {other}"),
    }
    // All agree: the launch reaches the lowering.
    match launch(32, 8, 16, 4, [8, 3]).sync_on(&s) {
        Err(Error::InvalidLaunch { problem, .. }) => panic!("refused: {problem}"),
        Err(Error::Compile { specialization, .. }) => assert_eq!(specialization, "B = 8"),
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => {}
    }
}

#[test]
fn a_launch_can_be_awaited() {
    let mut r = rng("a_launch_can_be_awaited");
    let n = 200;
    let x: Vec<f32> = random(&mut r, n, -10.0, 10.0);
    let y: Vec<f32> = random(&mut r, n, -10.0, 10.0);
    let launch = axpy(
        axpy_entry(1),
        AXPY,
        api::full(f32::NAN, &[n]).partition([64]),
        0.5f32,
        api::from_host(&x, &[n]),
        api::from_host(&y, &[n]),
    )
    .then(|(z, a, x, y)| axpy(axpy_entry(1), AXPY, z, a, y, x))
    .first()
    .unpartition()
    .to_host_vec();
    let mut fut = std::pin::pin!(std::future::IntoFuture::into_future(launch));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let got = loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            break ok(v);
        }
    };
    // The second launch swaps x and y: z = a * y + x.
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 0.5 * y + x).collect();
    assert_same("awaited axpy", &got, &want);
}
