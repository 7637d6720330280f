//! Shared helpers of the runtime's tests: the context (on the backend `CUPRUM_DEVICE`
//! selects) and small kernels built with `cuprum_ir::KernelBuilder`. Seeded random data is
//! `cuprum-testkit`'s, re-exported.
#![allow(dead_code, unused_imports)]

use std::sync::Arc;

use cuprum_ir::{
    AddressSpace, BinaryOp, Block, CmpOp, Constant, Dim, Kernel, KernelBuilder, LaunchBounds,
    Module, Op, ParamKind, ScalarType, SliceAccess, Special, Stmt, TrapKind, Value,
};
use cuprum_runtime::CudaContext;
pub use cuprum_testkit::random::rng;

/// The context every test uses: device 0 on the backend `CUPRUM_DEVICE` selects.
pub fn ctx() -> CudaContext {
    match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(e) => panic!("could not open device 0: {e}"),
    }
}

fn def(b: &mut KernelBuilder, op: Op) -> Value {
    match b.def(op) {
        Ok(v) => v,
        Err(e) => panic!("ill-typed test kernel: {e}"),
    }
}

/// `blockIdx.x * blockDim.x + threadIdx.x` as a `U64`.
fn global_index_x(b: &mut KernelBuilder) -> Value {
    let tid = def(b, Op::Special(Special::ThreadIdx(Dim::X)));
    let bid = def(b, Op::Special(Special::BlockIdx(Dim::X)));
    let bdim = def(b, Op::Special(Special::BlockDim(Dim::X)));
    let base = def(b, Op::Binary(BinaryOp::Mul, bid, bdim));
    let i = def(b, Op::Binary(BinaryOp::Add, base, tid));
    def(
        b,
        Op::Cast {
            value: i,
            to: ScalarType::U64,
        },
    )
}

/// The address of element `i` (a `U64`) of slice parameter `param` with `elem_size` bytes.
fn element_addr(b: &mut KernelBuilder, param: u32, i: Value, elem_size: u64) -> Value {
    let size = b.constant(Constant::u64(elem_size));
    let off = def(b, Op::Binary(BinaryOp::Mul, i, size));
    let base = def(b, Op::SliceBase(param));
    def(b, Op::Binary(BinaryOp::Add, base, off))
}

/// `vecadd(a: &[f32], b: &[f32], out: DisjointSlice<f32>)`: `out[i] = a[i] + b[i]` for
/// `i < out.len()`.
pub fn vecadd_kernel(name: &str, launch_bounds: Option<u32>) -> Kernel {
    let f32_slice = |access| ParamKind::Slice {
        elem: ScalarType::F32,
        access,
    };
    let mut b = KernelBuilder::new(name);
    let pa = b.param("a", f32_slice(SliceAccess::ReadOnly));
    let pb = b.param("b", f32_slice(SliceAccess::ReadOnly));
    let pout = b.param("out", f32_slice(SliceAccess::Disjoint));
    b.set_launch_bounds(launch_bounds.map(|max_threads| LaunchBounds {
        max_threads,
        min_blocks_per_sm: None,
    }));
    let i = global_index_x(&mut b);
    let n = def(&mut b, Op::SliceLen(pout));
    let cond = def(&mut b, Op::Compare(CmpOp::Lt, i, n));
    b.begin_block();
    let addr_a = element_addr(&mut b, pa, i, 4);
    let va = def(
        &mut b,
        Op::Load {
            space: AddressSpace::Global,
            ty: ScalarType::F32,
            addr: addr_a,
            eviction: cuprum_ir::Eviction::Normal,
        },
    );
    let addr_b = element_addr(&mut b, pb, i, 4);
    let vb = def(
        &mut b,
        Op::Load {
            space: AddressSpace::Global,
            ty: ScalarType::F32,
            addr: addr_b,
            eviction: cuprum_ir::Eviction::Normal,
        },
    );
    let sum = def(&mut b, Op::Binary(BinaryOp::Add, va, vb));
    let addr_out = element_addr(&mut b, pout, i, 4);
    b.push(Stmt::Store {
        space: AddressSpace::Global,
        addr: addr_out,
        value: sum,
    });
    let then = b.end_block();
    b.push(Stmt::If {
        cond,
        then,
        otherwise: Block::default(),
    });
    b.finish()
}

/// The scalar parameter types of [`scalars_kernel`], in order.
pub const SCALAR_PARAMS: [ScalarType; 9] = [
    ScalarType::U8,
    ScalarType::I16,
    ScalarType::Bool,
    ScalarType::F16,
    ScalarType::I64,
    ScalarType::F32,
    ScalarType::BF16,
    ScalarType::U32,
    ScalarType::F64,
];

/// `scalars(out: &mut [u64], p0: u8, p1: i16, p2: bool, p3: f16, p4: i64, p5: f32, p6: bf16,
/// p7: u32, p8: f64)`: stores each parameter's bits, zero-extended, at `out[k]`. Proves that
/// every scalar size travels through the launch intact.
pub fn scalars_kernel() -> Kernel {
    let mut b = KernelBuilder::new("scalars");
    let pout = b.param(
        "out",
        ParamKind::Slice {
            elem: ScalarType::U64,
            access: SliceAccess::ReadWrite,
        },
    );
    let params: Vec<u32> = SCALAR_PARAMS
        .iter()
        .enumerate()
        .map(|(k, &ty)| b.param(format!("p{k}"), ParamKind::Scalar(ty)))
        .collect();
    for (k, (&ty, &p)) in SCALAR_PARAMS.iter().zip(&params).enumerate() {
        let v = def(&mut b, Op::Param(p));
        let unsigned = match ty {
            ScalarType::I16 | ScalarType::F16 | ScalarType::BF16 => Some(ScalarType::U16),
            ScalarType::I64 | ScalarType::F64 => Some(ScalarType::U64),
            ScalarType::F32 => Some(ScalarType::U32),
            _ => None,
        };
        let v = match unsigned {
            Some(to) => def(&mut b, Op::Bitcast { value: v, to }),
            None => v,
        };
        let wide = if b.type_of(v) == ScalarType::U64 {
            v
        } else {
            def(
                &mut b,
                Op::Cast {
                    value: v,
                    to: ScalarType::U64,
                },
            )
        };
        let k = b.constant(Constant::u64(k as u64));
        let addr = element_addr(&mut b, pout, k, 8);
        b.push(Stmt::Store {
            space: AddressSpace::Global,
            addr,
            value: wide,
        });
    }
    b.finish()
}

/// `trap_kernel(out: DisjointSlice<u32>)`: every thread fails a bounds check at once.
pub fn trap_kernel() -> Kernel {
    let mut b = KernelBuilder::new("trap_kernel");
    let pout = b.param(
        "out",
        ParamKind::Slice {
            elem: ScalarType::U32,
            access: SliceAccess::Disjoint,
        },
    );
    let i = global_index_x(&mut b);
    let len = def(&mut b, Op::SliceLen(pout));
    let bigger = def(&mut b, Op::Binary(BinaryOp::Add, i, len));
    b.push(Stmt::Trap(TrapKind::BoundsCheck {
        index: bigger,
        len,
        site: "out[i + out.len()]".to_owned(),
    }));
    b.finish()
}

/// `reversed(out: DisjointSlice<u32>)`, one block of 128 threads whose dynamic shared memory
/// must start 1024-aligned: thread `t` writes `t` to word `127 - t` of it, then, after a
/// barrier, `out[t] = word t + (start % 1024)`, which is `127 - t` when the start is aligned.
pub fn aligned_dynamic_shared_kernel() -> Kernel {
    let mut b = KernelBuilder::new("reversed");
    let pout = b.param(
        "out",
        ParamKind::Slice {
            elem: ScalarType::U32,
            access: SliceAccess::Disjoint,
        },
    );
    b.set_block(Some((128, 1, 1)));
    b.align_dyn_shared(1024);
    let base = def(&mut b, Op::DynSharedAddr);
    let tid = def(&mut b, Op::Special(Special::ThreadIdx(Dim::X)));
    let last = b.constant(Constant::u32(127));
    let four = b.constant(Constant::u32(4));
    let mirrored = def(&mut b, Op::Binary(BinaryOp::Sub, last, tid));
    let off = def(&mut b, Op::Binary(BinaryOp::Mul, mirrored, four));
    let at = def(&mut b, Op::Binary(BinaryOp::Add, base, off));
    b.push(Stmt::Store {
        space: AddressSpace::Shared,
        addr: at,
        value: tid,
    });
    b.push(Stmt::Barrier);
    let off = def(&mut b, Op::Binary(BinaryOp::Mul, tid, four));
    let at = def(&mut b, Op::Binary(BinaryOp::Add, base, off));
    let word = def(
        &mut b,
        Op::Load {
            space: AddressSpace::Shared,
            ty: ScalarType::U32,
            addr: at,
            eviction: cuprum_ir::Eviction::Normal,
        },
    );
    let mask = b.constant(Constant::u32(1023));
    let misalignment = def(&mut b, Op::Binary(BinaryOp::And, base, mask));
    let value = def(&mut b, Op::Binary(BinaryOp::Add, word, misalignment));
    let i = def(
        &mut b,
        Op::Cast {
            value: tid,
            to: ScalarType::U64,
        },
    );
    let addr = element_addr(&mut b, pout, i, 4);
    b.push(Stmt::Store {
        space: AddressSpace::Global,
        addr,
        value,
    });
    b.finish()
}

pub fn module(kernels: Vec<Kernel>) -> Arc<Module> {
    let module = Module { kernels };
    if let Err(e) = cuprum_ir::validate_module(&module) {
        panic!("invalid test module: {e}");
    }
    Arc::new(module)
}
