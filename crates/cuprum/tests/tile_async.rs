//! cuTile Rust's lower-level host API on cuprum: `with_context` and `and_then_with_context`
//! (operations made from the execution context), `schedule` on scheduling policies
//! (awaited under tokio), and raw device memory by address (`malloc_async`,
//! `memcpy_htod_async`, `memcpy_dtoh_async`, `free_async`), each checked against what it
//! should compute.

use std::sync::Arc;

use cuprum::tile::cuda_async::device_context::global_policy;
use cuprum::tile::cuda_async::device_operation::{ExecutionContext, value, with_context};
use cuprum::tile::cuda_async::scheduling_policies::{
    SchedulingPolicy, SingleStream, StreamPoolRoundRobin,
};
use cuprum::tile::cuda_core::{
    Device, free_async, malloc_async, memcpy_dtoh_async, memcpy_htod_async,
};
use cuprum::tile::prelude::*;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn scale<const B: i32>(out: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>, k: f32) {
        out.store(load_tile_like(x, out) * k);
    }
}

/// A kernel with tuning hints: 16 warps and 2 blocks per multiprocessor on sm_90 (the
/// emulator models sm_90), 2 warps elsewhere; the lowering alone would choose 4.
#[cuprum::tile::module]
mod hinted {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry(optimization_hints = (
        sm_90 = (num_worker_warps_per_cta = 16, occupancy = 2, num_cta_in_cga = 1),
        default = (num_worker_warps_per_cta = 2),
    ))]
    fn twice<const B: i32>(out: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>) {
        out.store(load_tile_like(x, out) * 2.0f32);
    }
}

fn data(n: usize, salt: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ salt) % 1000) as f32 - 500.0)
        .collect()
}

#[test]
fn operations_made_from_the_execution_context_run_on_its_stream() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let n = 300;
    let hx = data(n, 7);
    let x = hx.clone();
    // `with_context`: the closure sees the context and returns the operation to run.
    let op = with_context(move |ctx: &ExecutionContext| {
        assert!(ctx.stream().same_stream(ctx.get_cuda_stream()));
        api::from_host(&x, &[n])
    })
    .and_then_with_context(|ctx, x: Tensor<f32>| {
        let _ = ctx.get_device_id();
        kernels::scale(api::full(f32::NAN, &[n]).partition([64]), x, 3.0f32)
    })
    .then(|(out, _, _)| value(out.unpartition()));
    let out: Vec<f32> = op.to_host_vec().sync_on(&stream)?;
    let want: Vec<f32> = hx.iter().map(|v| v * 3.0).collect();
    assert_eq!(out, want);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_operations_run_on_their_policys_streams() -> Result<(), Error> {
    let device = Device::new(0)?;
    let n = 1000;
    let hx = data(n, 3);
    let policies: Vec<Arc<dyn SchedulingPolicy>> = vec![
        global_policy(0)?,
        Arc::new(SingleStream::new(&device)?),
        Arc::new(StreamPoolRoundRobin::new(&device, 3)?),
    ];
    for (p, policy) in policies.iter().enumerate() {
        for round in 0..4 {
            let k = (p * 10 + round) as f32;
            let out = kernels::scale(
                api::full(f32::NAN, &[n]).partition([128]),
                api::from_host(&hx, &[n]),
                k,
            )
            .first()
            .unpartition()
            .to_host_vec()
            .schedule(policy)?
            .await?;
            let want: Vec<f32> = hx.iter().map(|v| v * k).collect();
            assert_eq!(out, want, "policy {p}, round {round}");
        }
    }
    // A spawned task, as cuTile Rust's examples compile and launch on tokio's workers.
    let policy = global_policy(0)?;
    let hx2 = hx.clone();
    let task = tokio::spawn(async move {
        api::from_host(&hx2, &[n])
            .to_host_vec()
            .schedule(&policy)?
            .await
    });
    let back = task.await.map_err(|e| Error::SharedOpFailed {
        message: e.to_string(),
    })??;
    assert_eq!(back, hx);
    Ok(())
}

#[test]
fn raw_device_memory_copies_whole_and_in_part() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let n = 1027usize;
    let first: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
    let part: Vec<u32> = (0..100u32).map(|i| 7 * i + 1).collect();
    let mut back = vec![0xDEAD_BEEFu32; n];
    let mut tail = vec![0xDEAD_BEEFu32; 50];
    // SAFETY: every copy stays inside the allocation, from and into host vectors of the
    // right lengths, and nothing uses the address after `free_async`.
    unsafe {
        let a = malloc_async(4 * n, &stream);
        let mut zeros = vec![1u32; n];
        memcpy_dtoh_async(zeros.as_mut_ptr(), a, n, &stream);
        assert!(zeros.iter().all(|&v| v == 0), "new raw memory holds zeros");
        memcpy_htod_async(a, first.as_ptr(), n, &stream);
        memcpy_htod_async(a + 4 * 200, part.as_ptr(), part.len(), &stream);
        memcpy_dtoh_async(back.as_mut_ptr(), a, n, &stream);
        memcpy_dtoh_async(tail.as_mut_ptr(), a + 4 * (n as u64 - 50), 50, &stream);
        free_async(a, &stream);
    }
    let mut want = first.clone();
    want[200..300].copy_from_slice(&part);
    assert_eq!(back, want);
    assert_eq!(tail, want[n - 50..]);
    Ok(())
}

#[test]
fn raw_copies_outside_an_allocation_are_refused_with_a_message() {
    let stream = Device::new(0)
        .and_then(|d| d.new_stream())
        .unwrap_or_else(|e| panic!("{e}"));
    let stream = (*stream).clone();
    let refused = std::panic::catch_unwind(move || {
        let mut out = [0u8; 8];
        // SAFETY: refused before anything is copied: the address is no allocation.
        unsafe { memcpy_dtoh_async(out.as_mut_ptr(), 16, 8, &stream) };
    });
    let message = refused
        .err()
        .and_then(|p| p.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(
        message.contains("no allocation of `malloc_async`"),
        "{message}"
    );
}

#[test]
fn kernels_compiled_ahead_launch_with_pushed_arguments() -> Result<(), Error> {
    use cuprum::tile::cuda_async::launch::AsyncKernelLaunch;
    use cuprum::tile::cuda_core::LaunchConfig;
    use cuprum::tile::tile_kernel::{CompileOptions, compile_from_context};

    let stream = Device::new(0)?.new_stream()?;
    let ctx = ExecutionContext::new((*stream).clone());
    let compile = |name: &str, generics: &[&str]| {
        compile_from_context(
            &ctx,
            kernels::__module_ast_self,
            "kernels",
            name,
            name,
            generics.iter().map(|g| g.to_string()).collect(),
            vec![],
            vec![],
            vec![],
            None,
            CompileOptions::default(),
            kernels::_SOURCE_HASH,
        )
    };
    let (function, validator) = compile("scale", &["100"])?;
    assert_eq!(validator.params(), ["out", "x", "k"]);
    let n = 250;
    let hx = data(n, 11);
    let x: Arc<Tensor<f32>> = api::from_host(&hx, &[n]).sync_on(&stream)?.into();
    let mut out_t = api::full(f32::NAN, &[n]).sync_on(&stream)?;
    for k in [2.0f32, -0.5] {
        let out = (&mut out_t).partition([100]);
        let grid = out.grid().map_err(|problem| Error::InvalidLaunch {
            kernel: "scale".into(),
            problem,
        })?;
        let mut launch = AsyncKernelLaunch::new(function.clone());
        launch
            .push_arg(&out)
            .push_arg_arc(&x)
            .push_arg(k)
            .set_launch_config(LaunchConfig {
                grid_dim: grid,
                block_dim: (1, 1, 1),
                shared_mem_bytes: 0,
            });
        launch.sync_on(&stream)?;
        let got: Vec<f32> = (&out_t).to_host_vec().sync_on(&stream)?;
        let want: Vec<f32> = hx.iter().map(|v| v * k).collect();
        assert_eq!(got, want, "k = {k}");
    }
    let out = (&mut out_t).partition([100]);
    // A launch checks its arguments as every launch does.
    let mut bad = AsyncKernelLaunch::new(function.clone());
    bad.push_arg(&out).push_arg(1.0f32).push_arg(1.0f32);
    let e = bad.sync_on(&stream).expect_err("a scalar for a tensor");
    assert!(e.to_string().contains("parameter `x`"), "{e}");
    // Unknown entries and missing generics are refused when compiling.
    let e = compile("nope", &["1"]).err().map(|e| e.to_string());
    assert!(
        e.as_deref().is_some_and(|m| m.contains("no entry `nope`")),
        "{e:?}"
    );
    let e = compile("scale", &[]).err().map(|e| e.to_string());
    assert!(e.is_some(), "a specialization without its generics");
    Ok(())
}

#[test]
fn a_launch_configs_block_and_shared_memory_are_honoured_or_refused() -> Result<(), Error> {
    use cuprum::tile::cuda_async::launch::AsyncKernelLaunch;
    use cuprum::tile::cuda_core::LaunchConfig;
    use cuprum::tile::error::LaunchProblem;
    use cuprum::tile::tile_kernel::{CompileOptions, compile_from_context};

    // A context of its own, so that its launch counter counts only this test's launches.
    let device = Device::from_context(cuprum::CudaContext::new(0)?);
    let stream = device.new_stream()?;
    let ctx = ExecutionContext::new((*stream).clone());
    let (function, _) = compile_from_context(
        &ctx,
        kernels::__module_ast_self,
        "kernels",
        "scale",
        "scale",
        vec!["128".to_string()],
        vec![],
        vec![],
        vec![],
        None,
        CompileOptions::default(),
        kernels::_SOURCE_HASH,
    )?;
    let lowered = function.block_dim().expect("a tile kernel has its block");
    assert!(
        lowered.0 >= 32 && lowered.1 == 1 && lowered.2 == 1,
        "a lowered block of whole warps along x: {lowered:?}"
    );
    let n = 1000;
    let hx = data(n, 17);
    let x: Arc<Tensor<f32>> = api::from_host(&hx, &[n]).sync_on(&stream)?.into();
    let limit = device.context().limits().max_shared_per_block_optin;
    // Runs one launch with `block` and `shared` into an output poisoned with NaN: the
    // launch's result (the output, read back) and how many launches the context counted.
    type Run = (Result<Vec<f32>, Error>, u64);
    let run = |block: (u32, u32, u32), shared: u32, k: f32| -> Result<Run, Error> {
        let mut out_t = api::full(f32::NAN, &[n]).sync_on(&stream)?;
        let out = (&mut out_t).partition([128]);
        let grid = out.grid().map_err(|problem| Error::InvalidLaunch {
            kernel: "scale".into(),
            problem,
        })?;
        let mut launch = AsyncKernelLaunch::new(function.clone());
        launch
            .push_arg(&out)
            .push_arg_arc(&x)
            .push_arg(k)
            .set_launch_config(LaunchConfig {
                grid_dim: grid,
                block_dim: block,
                shared_mem_bytes: shared,
            });
        let before = device.context().stats().launches;
        let result = launch.sync_on(&stream);
        let launched = device.context().stats().launches - before;
        let host = (&out_t).to_host_vec().sync_on(&stream)?;
        Ok((result.map(|()| host), launched))
    };
    // cuTile Rust's block, the lowered block, and shared memory beyond the kernel's own.
    for (block, shared, k) in [
        ((1, 1, 1), 0, 2.0f32),
        (lowered, 0, -3.0),
        ((1, 1, 1), 4096, 0.5),
        (lowered, 1024, 7.0),
    ] {
        let (got, launched) = run(block, shared, k)?;
        let want: Vec<f32> = hx.iter().map(|v| v * k).collect();
        assert_eq!(
            got?, want,
            "block {block:?}, {shared} bytes of shared memory"
        );
        assert_eq!(launched, 1);
    }
    // Another block is refused before anything runs.
    for block in [(lowered.0 * 2, 1, 1), (lowered.0 / 2, 2, 1), (0, 1, 1)] {
        let (result, launched) = run(block, 0, 1.0)?;
        match result {
            Err(Error::InvalidLaunch {
                kernel,
                problem: LaunchProblem::BlockShape { given, lowered: l },
            }) => {
                assert_eq!((kernel.as_str(), given, l), ("scale", block, lowered));
            }
            Err(other) => panic!("block {block:?}: not a BlockShape refusal: {other}"),
            Ok(_) => panic!("block {block:?} was launched, not refused"),
        }
        assert_eq!(launched, 0, "block {block:?}");
    }
    // Shared memory is not ignored: more than a block can have is refused by the runtime.
    let (result, launched) = run((1, 1, 1), limit + 1, 1.0)?;
    match result {
        Err(Error::Runtime(e @ cuprum::Error::InvalidLaunch { .. })) => {
            assert!(e.to_string().contains("shared memory"), "{e}");
        }
        Err(other) => panic!("not the runtime's refusal of the shared memory: {other}"),
        Ok(_) => panic!(
            "{} bytes of shared memory beyond the kernel's own were launched",
            limit + 1
        ),
    }
    assert_eq!(launched, 0);
    // The stream is still usable.
    let (got, _) = run(lowered, 0, 4.0)?;
    assert_eq!(got?, hx.iter().map(|v| v * 4.0).collect::<Vec<f32>>());
    Ok(())
}

#[test]
fn the_autotuner_times_each_candidate_and_records_failures() -> Result<(), Error> {
    use cuprum::tile::tune::{Autotuner, Config, ParamValue, TrialState};

    let stream = Device::new(0)?.new_stream()?;
    let n = 4096;
    let x: Arc<Tensor<f32>> = api::from_host(&data(n, 5), &[n]).sync_on(&stream)?.into();
    let configs: Vec<Config> = [128i64, 0, 512, 100_000, 1024]
        .into_iter()
        .map(|b| Config::new([("B", ParamValue::Int(b))]))
        .collect();
    let output = Autotuner::new("scale")
        .configs(configs)
        .prune(|c| c.int("B").unwrap_or(0) <= 4096)
        .run(&stream, |stream, config| {
            let b = config.int("B").unwrap_or(0) as usize;
            // A zero-sized tile is refused by the launch: the candidate is invalid.
            let mut out = Some(api::zeros::<f32>(&[n]).sync_on(stream)?.partition([b]));
            let x = x.clone();
            let mut launch = move |s: &Arc<cuprum::tile::cuda_core::Stream>| {
                let o = out.take().ok_or_else(|| Error::SharedOpFailed {
                    message: "the output went missing".into(),
                })?;
                let (o, _, _) = kernels::scale(o, x.clone(), 2.0f32).sync_on(s)?;
                out = Some(o);
                Ok(())
            };
            launch(stream)?;
            Ok(launch)
        })?;
    let ids: Vec<&str> = output.trials.iter().map(|t| t.config_id.as_str()).collect();
    assert_eq!(ids, ["B=128", "B=0", "B=512", "B=1024"], "pruned: B=100000");
    for t in &output.trials {
        match (&t.state, t.config_id.as_str()) {
            (TrialState::Invalid { reason }, "B=0") => {
                assert!(!reason.is_empty());
            }
            (
                TrialState::Measured {
                    reps,
                    min_ms,
                    median_ms,
                },
                id,
            ) => {
                assert_ne!(id, "B=0");
                assert!(*reps >= 3 && min_ms <= median_ms, "{t:?}");
            }
            other => panic!("unexpected trial {other:?}"),
        }
    }
    let best = output.best.map(|c| c.id).unwrap_or_default();
    let fastest = output
        .trials
        .iter()
        .filter_map(|t| Some((t.median_ms()?, t.config_id.clone())))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, id)| id)
        .unwrap_or_default();
    assert_eq!(best, fastest);
    Ok(())
}

/// An entry's `optimization_hints` choose the block for the device's target, a launch's
/// `.compile_options(..)` override them, and the kernel computes the same either way; a hint
/// the lowering cannot honour is a typed error before anything runs.
#[test]
fn tuning_hints_choose_the_block_and_change_no_result() -> Result<(), Error> {
    use cuprum::tile::tile_kernel::{CompileOptions, TileKernel, compile_from_context};
    use cuprum_testkit::random::{random, rng};

    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let ctx = ExecutionContext::new((*stream).clone());
    let on_sm90 = device.context().limits().compute_capability == (9, 0);
    let compile = |options: CompileOptions| {
        compile_from_context(
            &ctx,
            hinted::__module_ast_self,
            "hinted",
            "twice",
            "twice",
            vec!["1024".to_string()],
            vec![],
            vec![],
            vec![],
            None,
            options,
            hinted::_SOURCE_HASH,
        )
    };
    let (declared, _) = compile(CompileOptions::default())?;
    assert_eq!(
        declared.block_dim(),
        Some((if on_sm90 { 512 } else { 64 }, 1, 1))
    );
    let (overridden, _) = compile(CompileOptions::default().num_worker_warps_per_cta(8))?;
    assert_eq!(overridden.block_dim(), Some((256, 1, 1)));

    let mut rng = rng("tuning_hints");
    let n = 5000;
    let hx = random(&mut rng, n, -100.0f32, 100.0);
    let want: Vec<f32> = hx.iter().map(|v| v * 2.0).collect();
    let x = api::from_host(&hx, &[n]).sync_on(&stream)?;
    for options in [
        CompileOptions::default(),
        CompileOptions::default().num_worker_warps_per_cta(1),
        CompileOptions::default().occupancy(8),
    ] {
        let (out, _) = hinted::twice(api::full(f32::NAN, &[n]).partition([1024]), &x)
            .compile_options(options)
            .sync_on(&stream)?;
        let got: Vec<f32> = out.unpartition().to_host_vec().sync_on(&stream)?;
        assert_eq!(got, want, "{options:?}");
    }
    let e = hinted::twice(api::full(f32::NAN, &[n]).partition([1024]), &x)
        .compile_options(CompileOptions::default().num_worker_warps_per_cta(6))
        .sync_on(&stream)
        .expect_err("6 warps");
    assert!(e.to_string().contains("a power of two"), "{e}");
    Ok(())
}
