//! Kernel launches on the backend `CUPRUM_DEVICE` selects: a vector addition against a
//! plain-Rust reference (outputs poisoned first, every element checked), every scalar type
//! through the parameter packing, argument and configuration checks, module lookups, streams
//! and events.

mod common;

use common::{
    SCALAR_PARAMS, aligned_dynamic_shared_kernel, ctx, module, rng, scalars_kernel, vecadd_kernel,
};
use cuprum_runtime::{
    BackendKind, DeviceBuffer, Error, KernelArg, LaunchConfig, LaunchConfig1D, LoadedModule,
};
use cuprum_testkit::poison::poisoned;
use half::{bf16, f16};
use rand::Rng;

fn run_vecadd(len: usize, block: u32, shared_mem_bytes: u32) {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = LoadedModule::load(&ctx, module(vec![vecadd_kernel("vecadd", None)])).unwrap();
    assert_eq!(m.ptx().is_some(), ctx.backend() == BackendKind::Cuda);
    let k = m.kernel_index("vecadd").unwrap();
    let mut rng = rng("vecadd");
    let a: Vec<f32> = (0..len).map(|_| rng.random_range(-1e3..1e3)).collect();
    let b: Vec<f32> = (0..len).map(|_| rng.random_range(-1e3..1e3)).collect();
    let da = DeviceBuffer::from_host(&stream, &a).unwrap();
    let db = DeviceBuffer::from_host(&stream, &b).unwrap();
    let mut dout = DeviceBuffer::from_host(&stream, &poisoned::<f32>(len)).unwrap();
    let mut config: LaunchConfig = LaunchConfig1D::for_len(len, block).into();
    config.shared_mem_bytes = shared_mem_bytes;
    let launches = ctx.stats().launches;
    // SAFETY: the arguments match the kernel, and the output aliases no input.
    unsafe {
        m.launch(
            &stream,
            k,
            &config,
            &[
                KernelArg::slice(&da),
                KernelArg::slice(&db),
                KernelArg::slice_mut(&mut dout),
            ],
        )
    }
    .unwrap();
    assert_eq!(ctx.stats().launches, launches + 1);
    let out = dout.to_host_vec(&stream).unwrap();
    assert_eq!(out.len(), len);
    for i in 0..len {
        let want = a[i] + b[i];
        assert!(
            out[i].to_bits() == want.to_bits(),
            "vecadd len {len}: out[{i}] = {} (bits {:#x}), want {want}",
            out[i],
            out[i].to_bits()
        );
    }
}

#[test]
fn vecadd_empty() {
    // Zero-length buffers (address 0) and a grid of one block whose threads all fall outside.
    run_vecadd(0, 128, 0);
}

#[test]
fn vecadd_1() {
    run_vecadd(1, 128, 0);
}

#[test]
fn vecadd_255() {
    run_vecadd(255, 64, 0);
}

#[test]
fn vecadd_1000() {
    run_vecadd(1000, 256, 0);
}

#[test]
fn vecadd_1m_plus_3() {
    run_vecadd((1 << 20) + 3, 256, 0);
}

#[test]
fn vecadd_with_large_dynamic_shared_memory() {
    // Above the 48 KiB default: the CUDA backend must opt the kernel in.
    run_vecadd(777, 128, 100 * 1024);
}

#[test]
fn every_scalar_type_reaches_the_kernel() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = LoadedModule::load(&ctx, module(vec![scalars_kernel()])).unwrap();
    let mut rng = rng("scalars");
    for _ in 0..4 {
        let p0: u8 = rng.random();
        let p1: i16 = rng.random();
        let p2: bool = rng.random();
        let p3 = f16::from_f32(rng.random_range(-100.0..100.0));
        let p4: i64 = rng.random();
        let p5: f32 = rng.random_range(-1e9..1e9);
        let p6 = bf16::from_f32(rng.random_range(-1e9..1e9));
        let p7: u32 = rng.random();
        let p8: f64 = rng.random_range(-1e300..1e300);
        let mut out = DeviceBuffer::from_host(&stream, &[0xDEAD_BEEF_u64; 9]).unwrap();
        let args = [
            KernelArg::slice_mut(&mut out),
            KernelArg::scalar(p0),
            KernelArg::scalar(p1),
            KernelArg::scalar(p2),
            KernelArg::scalar(p3),
            KernelArg::scalar(p4),
            KernelArg::scalar(p5),
            KernelArg::scalar(p6),
            KernelArg::scalar(p7),
            KernelArg::scalar(p8),
        ];
        for (arg, ty) in args[1..].iter().zip(SCALAR_PARAMS) {
            assert!(matches!(arg, KernelArg::Scalar { ty: t, .. } if *t == ty));
        }
        // SAFETY: the arguments match; `out` has 9 elements.
        unsafe { m.launch(&stream, 0, &LaunchConfig1D::new(1, 1, 0).into(), &args) }.unwrap();
        let got = out.to_host_vec(&stream).unwrap();
        let want = [
            u64::from(p0),
            u64::from(p1 as u16),
            u64::from(p2),
            u64::from(p3.to_bits()),
            p4 as u64,
            u64::from(p5.to_bits()),
            u64::from(p6.to_bits()),
            u64::from(p7),
            p8.to_bits(),
        ];
        assert_eq!(got, want);
    }
}

#[test]
fn argument_mismatches_are_errors() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = LoadedModule::load(&ctx, module(vec![vecadd_kernel("vecadd", None)])).unwrap();
    let a = DeviceBuffer::from_host(&stream, &[1.0f32; 8]).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &[0.0f32; 8]).unwrap();
    let config: LaunchConfig = LaunchConfig1D::new(1, 8, 0).into();
    let expect_mismatch = |result: cuprum_runtime::Result<()>, needle: &str| match result {
        Err(Error::ArgumentMismatch { kernel, reason }) => {
            assert_eq!(kernel, "vecadd");
            assert!(
                reason.contains(needle),
                "reason `{reason}` lacks `{needle}`"
            );
        }
        other => panic!("expected ArgumentMismatch, got {other:?}"),
    };
    // Too few.
    expect_mismatch(
        // SAFETY: refused before anything runs.
        unsafe { m.launch(&stream, 0, &config, &[KernelArg::slice(&a)]) },
        "3 argument(s)",
    );
    // Too many.
    let a2 = KernelArg::slice(&a);
    expect_mismatch(
        // SAFETY: refused before anything runs.
        unsafe { m.launch(&stream, 0, &config, &[a2, a2, a2, a2]) },
        "4 were given",
    );
    // A scalar where a slice goes.
    expect_mismatch(
        // SAFETY: refused before anything runs.
        unsafe {
            m.launch(
                &stream,
                0,
                &config,
                &[
                    a2,
                    KernelArg::scalar(1.0f32),
                    KernelArg::slice_mut(&mut out),
                ],
            )
        },
        "argument 1 (`b`)",
    );
    assert!(
        m.check_args(0, &[a2, a2, KernelArg::slice_mut(&mut out)])
            .is_ok()
    );

    // A slice where a scalar goes, and a scalar of the wrong type.
    let s = LoadedModule::load(&ctx, module(vec![scalars_kernel()])).unwrap();
    let mut o = DeviceBuffer::from_host(&stream, &[0u64; 9]).unwrap();
    let mut args = vec![KernelArg::slice_mut(&mut o)];
    args.extend(
        SCALAR_PARAMS
            .iter()
            .map(|&ty| KernelArg::Scalar { ty, bits: 0 }),
    );
    assert!(s.check_args(0, &args).is_ok());
    let mut wrong_type = args.clone();
    wrong_type[2] = KernelArg::scalar(7i32);
    expect_mismatch_named(s.check_args(0, &wrong_type), "scalars", "`i16`");
    let mut slice_for_scalar = args.clone();
    slice_for_scalar[1] = a2;
    expect_mismatch_named(s.check_args(0, &slice_for_scalar), "scalars", "argument 1");
    let mut wide_bits = args.clone();
    wide_bits[1] = KernelArg::Scalar {
        ty: cuprum_ir::ScalarType::U8,
        bits: 0x100,
    };
    expect_mismatch_named(s.check_args(0, &wide_bits), "scalars", "above the width");
    // A slice that does not start where its buffer starts (not 16-byte aligned): the
    // optimizer's vector accesses rely on slice bases being aligned.
    let KernelArg::Slice { address, len } = args[0] else {
        unreachable!()
    };
    let mut offset = args.clone();
    offset[0] = KernelArg::Slice {
        address: address + 8,
        len: len - 1,
    };
    expect_mismatch_named(s.check_args(0, &offset), "scalars", "not a multiple of 16");
    // The output was never touched.
    assert_eq!(out.to_host_vec(&stream).unwrap(), vec![0.0; 8]);
}

fn expect_mismatch_named(result: cuprum_runtime::Result<()>, name: &str, needle: &str) {
    match result {
        Err(Error::ArgumentMismatch { kernel, reason }) => {
            assert_eq!(kernel, name);
            assert!(
                reason.contains(needle),
                "reason `{reason}` lacks `{needle}`"
            );
        }
        other => panic!("expected ArgumentMismatch, got {other:?}"),
    }
}

#[test]
fn raw_launches_check_limits_and_launch_bounds() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = LoadedModule::load(&ctx, module(vec![vecadd_kernel("bounded", Some(128))])).unwrap();
    let a = DeviceBuffer::from_host(&stream, &[1.0f32; 300]).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &[0.0f32; 300]).unwrap();
    let launch = |config: LaunchConfig, out: &mut DeviceBuffer<f32>| {
        let args = [
            KernelArg::slice(&a),
            KernelArg::slice(&a),
            KernelArg::slice_mut(out),
        ];
        // SAFETY: the arguments match the kernel.
        unsafe { m.launch(&stream, 0, &config, &args) }
    };
    let expect_invalid = |r: cuprum_runtime::Result<()>, needle: &str| match r {
        Err(Error::InvalidLaunch { kernel, reason }) => {
            assert_eq!(kernel, "bounded");
            assert!(
                reason.contains(needle),
                "reason `{reason}` lacks `{needle}`"
            );
        }
        other => panic!("expected InvalidLaunch, got {other:?}"),
    };
    expect_invalid(
        launch(LaunchConfig1D::new(2, 256, 0).into(), &mut out),
        "launch bounds of 128",
    );
    expect_invalid(
        launch(LaunchConfig1D::new(0, 128, 0).into(), &mut out),
        "is 0",
    );
    let too_much_shared = ctx.limits().max_shared_per_block_optin + 1;
    expect_invalid(
        launch(
            LaunchConfig1D::new(3, 128, too_much_shared).into(),
            &mut out,
        ),
        &too_much_shared.to_string(),
    );
    // Nothing ran.
    assert_eq!(out.to_host_vec(&stream).unwrap(), vec![0.0; 300]);
    launch(LaunchConfig1D::new(3, 128, 0).into(), &mut out).unwrap();
    assert_eq!(out.to_host_vec(&stream).unwrap(), vec![2.0; 300]);
}

/// A kernel whose dynamic shared memory must start 1024-aligned gets it aligned on both
/// backends (on a GPU the kernel rounds the start up into padding the launch adds), and the
/// padding counts against the device's shared memory per block.
#[test]
fn dynamic_shared_memory_aligned_above_16_bytes_starts_aligned() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let kernel = aligned_dynamic_shared_kernel();
    let padding = kernel.dyn_shared_padding();
    assert_eq!(padding, 1008);
    let m = LoadedModule::load(&ctx, module(vec![kernel])).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(128)).unwrap();
    let launch = |shared: u32, out: &mut DeviceBuffer<u32>| {
        // SAFETY: the argument matches the kernel.
        unsafe {
            m.launch(
                &stream,
                0,
                &LaunchConfig1D::new(1, 128, shared).into(),
                &[KernelArg::slice_mut(out)],
            )
        }
    };
    launch(128 * 4, &mut out).unwrap();
    let want: Vec<u32> = (0..128).rev().collect();
    assert_eq!(out.to_host_vec(&stream).unwrap(), want);
    let over = ctx.limits().max_shared_per_block_optin - padding + 1;
    match launch(over, &mut out) {
        Err(Error::InvalidLaunch { reason, .. }) => assert!(
            reason.contains("1008 to align the dynamic region"),
            "{reason}"
        ),
        other => panic!("expected InvalidLaunch, got {other:?}"),
    }
}

#[test]
fn module_lookups() {
    let ctx = ctx();
    let m = LoadedModule::load(
        &ctx,
        module(vec![
            vecadd_kernel("first", None),
            vecadd_kernel("second", None),
        ]),
    )
    .unwrap();
    assert_eq!(m.kernel_index("first").unwrap(), 0);
    assert_eq!(m.kernel_index("second").unwrap(), 1);
    assert!(matches!(
        m.kernel_index("third"),
        Err(Error::KernelNotFound { name }) if name == "third"
    ));
    assert!(matches!(
        m.check_args(2, &[]),
        Err(Error::KernelNotFound { .. })
    ));
    assert!(m.context().same_context(&ctx));
    if let Some(ptx) = m.ptx() {
        assert!(ptx.contains("first") && ptx.contains("second"));
    }
}

#[test]
fn invalid_ir_is_a_compile_error() {
    let ctx = ctx();
    let mut kernel = vecadd_kernel("broken", None);
    kernel.name = "not a valid name".to_owned();
    let ir = std::sync::Arc::new(cuprum_ir::Module {
        kernels: vec![kernel],
    });
    assert!(matches!(
        LoadedModule::load(&ctx, ir),
        Err(Error::Compile { .. })
    ));
}

#[test]
fn driver_jit_errors_carry_the_log() {
    let ctx = ctx();
    let ir = module(vec![vecadd_kernel("vecadd", None)]);
    let bad_ptx = ".version 8.0\n.target sm_80\n.address_size 64\n\
                   .visible .entry vecadd(.param .u64 p0)\n{\n  bogus.instruction;\n}\n";
    match LoadedModule::load_with_ptx(&ctx, ir, bad_ptx.to_owned()) {
        Err(e @ Error::ModuleLoad { .. }) => {
            let Error::ModuleLoad { log, .. } = &e else {
                unreachable!()
            };
            assert!(!log.trim().is_empty(), "empty JIT log: {e}");
            eprintln!("{e}");
        }
        Ok(m) => assert_eq!(ctx.backend(), BackendKind::Emulator, "{:?}", m.ptx()),
        Err(other) => panic!("expected ModuleLoad, got {other:?}"),
    }
}

#[test]
fn launch_on_a_stream_of_another_context_is_refused() {
    let ctx_a = ctx();
    let ctx_b = ctx();
    let m = LoadedModule::load(&ctx_a, module(vec![vecadd_kernel("vecadd", None)])).unwrap();
    let stream_b = ctx_b.default_stream();
    let a = DeviceBuffer::from_host(&stream_b, &[1.0f32; 4]).unwrap();
    let mut out = DeviceBuffer::from_host(&stream_b, &[0.0f32; 4]).unwrap();
    let args = [
        KernelArg::slice(&a),
        KernelArg::slice(&a),
        KernelArg::slice_mut(&mut out),
    ];
    assert!(matches!(
        // SAFETY: refused before anything runs.
        unsafe { m.launch(&stream_b, 0, &LaunchConfig1D::new(1, 4, 0).into(), &args) },
        Err(Error::ContextMismatch)
    ));
}

#[test]
fn streams_and_events() {
    let ctx = ctx();
    let stream = ctx.new_stream().unwrap();
    let m = LoadedModule::load(&ctx, module(vec![vecadd_kernel("vecadd", None)])).unwrap();
    let n = 1 << 16;
    let a = DeviceBuffer::from_host(&stream, &vec![1.5f32; n]).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    let start = stream.record_event().unwrap();
    for _ in 0..3 {
        let args = [
            KernelArg::slice(&a),
            KernelArg::slice(&a),
            KernelArg::slice_mut(&mut out),
        ];
        // SAFETY: the arguments match the kernel.
        unsafe { m.launch(&stream, 0, &LaunchConfig1D::for_len(n, 256).into(), &args) }.unwrap();
    }
    let end = stream.record_event().unwrap();
    end.synchronize().unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms.is_finite() && ms >= 0.0, "elapsed {ms} ms");
    stream.synchronize().unwrap();
    assert!(out.to_host_vec(&stream).unwrap().iter().all(|&v| v == 3.0));
    assert!(stream.context().same_context(&ctx));

    // Events of another context cannot be compared.
    let other = common::ctx().default_stream().record_event().unwrap();
    assert!(matches!(
        start.elapsed_ms(&other),
        Err(Error::ContextMismatch)
    ));
}

#[test]
fn for_len_covers_the_input() {
    assert_eq!(
        LaunchConfig1D::for_len(0, 128),
        LaunchConfig1D::new(1, 128, 0)
    );
    assert_eq!(LaunchConfig1D::for_len(1, 128).grid, 1);
    assert_eq!(LaunchConfig1D::for_len(128, 128).grid, 1);
    assert_eq!(LaunchConfig1D::for_len(129, 128).grid, 2);
    assert_eq!(LaunchConfig1D::for_len((1 << 20) + 3, 256).grid, 4097);
    let c: LaunchConfig = LaunchConfig1D::new(5, 64, 16).into();
    assert_eq!(
        c,
        LaunchConfig {
            grid_dim: (5, 1, 1),
            block_dim: (64, 1, 1),
            shared_mem_bytes: 16
        }
    );
}

#[test]
fn a_launch_that_breaks_a_requirement_is_refused_before_it_runs() {
    use cuprum_ir::CmpOp;
    use cuprum_ir::requires::{Requirement, Term};
    // vecadd reads a[i] and b[i] for every i < out.len() without a check: its requirements
    // say both inputs are at least as long as the output.
    let mut kernel = vecadd_kernel("vecadd_required", None);
    for (input, name) in [(0, "a"), (1, "b")] {
        kernel.requires.push(Requirement {
            left: Term::Len(input),
            op: CmpOp::Ge,
            right: Term::Len(2),
            text: format!("{name}.len() >= out.len()"),
        });
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = LoadedModule::load(&ctx, module(vec![kernel])).unwrap();
    let k = m.kernel_index("vecadd_required").unwrap();
    let mut rng = rng("vecadd_required");
    let len = 1000;
    let a: Vec<f32> = (0..len).map(|_| rng.random_range(-1e3..1e3)).collect();
    let b: Vec<f32> = (0..len).map(|_| rng.random_range(-1e3..1e3)).collect();
    let da = DeviceBuffer::from_host(&stream, &a).unwrap();
    let short = DeviceBuffer::from_host(&stream, &b[..len - 1]).unwrap();
    let db = DeviceBuffer::from_host(&stream, &b).unwrap();
    let mut dout = DeviceBuffer::from_host(&stream, &poisoned::<f32>(len)).unwrap();
    let config: LaunchConfig = LaunchConfig1D::for_len(len, 128).into();
    let launches = ctx.stats().launches;
    // SAFETY: the arguments match the kernel and the output aliases no input; the launch is
    // refused before it runs.
    let refused = unsafe {
        m.launch(
            &stream,
            k,
            &config,
            &[
                KernelArg::slice(&da),
                KernelArg::slice(&short),
                KernelArg::slice_mut(&mut dout),
            ],
        )
    };
    match refused {
        Err(Error::InvalidLaunch { kernel, reason }) => {
            assert_eq!(kernel, "vecadd_required");
            assert!(reason.contains("b.len() >= out.len()"), "{reason}");
        }
        other => panic!("expected InvalidLaunch, got {other:?}"),
    }
    assert_eq!(ctx.stats().launches, launches, "the refused launch ran");
    // SAFETY: as above; every requirement holds.
    unsafe {
        m.launch(
            &stream,
            k,
            &config,
            &[
                KernelArg::slice(&da),
                KernelArg::slice(&db),
                KernelArg::slice_mut(&mut dout),
            ],
        )
    }
    .unwrap();
    let out = dout.to_host_vec(&stream).unwrap();
    for i in 0..len {
        let want = a[i] + b[i];
        assert_eq!(out[i].to_bits(), want.to_bits(), "out[{i}]");
    }
}
