//! NVTX ranges of the facade's launch paths, end to end: a child process (this binary, run
//! on one test) loads a fake profiler tool through `NVTX_INJECTION64_PATH` and launches a
//! `#[cuda_module]` kernel through its typed launcher and through `launch!`, and a tile kernel
//! through its lazy launcher, each inside a range of its own (`cuprum::nvtx::range`); the
//! tool's log must show each launch as a range named by the kernel, the tile launch inside a
//! range named by its entry and specialization, all properly nested. The runtime's own test
//! (`cuprum-runtime/tests/nvtx.rs`) checks copies, colors, payloads and the toggle.
//!
//! The fake tool is compiled with `rustc` (`cuprum_testkit::nvtx_probe`) or prebuilt and named
//! by `CUPRUM_NVTX_PROBE`; where there is neither (a GPU machine running prebuilt binaries),
//! the test says so and passes. The child runs on the backend `CUPRUM_DEVICE` selects.

use std::process::Command;

use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::tile::prelude::*;
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig1D, Module, cuda_module, launch, nvtx};
use cuprum_testkit::nvtx_probe::{self, Event, LOG_ENV_VAR};

const CHILD_ENV_VAR: &str = "CUPRUM_NVTX_TEST_CHILD";
const N: usize = 256;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_bounds(128)]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn nvtx_double(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let raw = i.get();
        if let Some(out) = y.get_mut(i) {
            *out = 2.0 * x[raw];
        }
    }
}

#[cuprum::tile::module]
mod tiles {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn nvtx_add<const B: i32>(
        z: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        let tile_x = load_tile_like(x, z);
        let tile_y = load_tile_like(y, z);
        z.store(tile_x + tile_y);
    }
}

/// What the child does under the tool; it checks every result, so a tool that broke a launch
/// would fail it.
fn child_work() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let x: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let mut dy = DeviceBuffer::<f32>::zeroed(&stream, N).unwrap();
    {
        let _typed = nvtx::range("typed");
        let module = kernels::load(&ctx).unwrap();
        let prepared = module
            .prepare_nvtx_double(LaunchConfig1D::new((N as u32).div_ceil(128), 128, 0))
            .unwrap();
        module
            .nvtx_double(&stream, &prepared, &dx, &mut dy)
            .unwrap();
    }
    {
        let _raw = nvtx::range("raw");
        let module = Module::from_ir(&ctx, kernels::ir().unwrap()).unwrap();
        let f = module.get_function("nvtx_double").unwrap();
        let blocks = (N as u32).div_ceil(128);
        // SAFETY: the kernel writes y[i] for i below y's length, reading x[i], of the same length.
        unsafe { launch!(f<<<blocks, 128, 0, &stream>>>(&dx, &dy)) }.unwrap();
    }
    let y = dy.to_host_vec(&stream).unwrap();
    assert!((0..N).all(|i| y[i] == 2.0 * x[i]), "{y:?}");

    let device = Device::new(0).unwrap();
    let tile_stream = device.new_stream().unwrap();
    let a = api::arange::<f32>(N);
    let b = api::ones::<f32>(&[N]);
    let z = api::zeros::<f32>(&[N]).partition([128]);
    let sum: Vec<f32> = {
        let _tile = nvtx::range("tile");
        tiles::nvtx_add(z, a, b)
            .first()
            .unpartition()
            .to_host_vec()
            .sync_on(&tile_stream)
            .unwrap()
    };
    assert!((0..N).all(|i| sum[i] == i as f32 + 1.0), "{sum:?}");
}

#[test]
fn nvtx_child_work() {
    if std::env::var_os(CHILD_ENV_VAR).is_some() {
        child_work();
    }
}

/// The names pushed directly inside the first push of `outer` (at its depth + 1).
fn pushed_inside<'a>(events: &'a [Event], outer: &str) -> Vec<&'a str> {
    let Some(start) = events.iter().position(|e| e.pushed_name() == Some(outer)) else {
        return Vec::new();
    };
    let depth = match &events[start] {
        Event::Push { depth, .. } | Event::PushA { depth, .. } => *depth,
        _ => unreachable!(),
    };
    let mut names = Vec::new();
    for event in &events[start + 1..] {
        match event {
            Event::Pop { depth: d } if *d < depth => break,
            Event::Push { depth: d, name, .. } | Event::PushA { depth: d, name }
                if *d == depth + 1 =>
            {
                names.push(name.as_str())
            }
            _ => {}
        }
    }
    names
}

#[test]
fn launches_of_every_path_are_ranges_named_by_the_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let probe = match nvtx_probe::build(dir.path()) {
        Ok(path) => path,
        Err(why) => {
            eprintln!("skipped: the NVTX probe could not be built ({why})");
            return;
        }
    };
    let log = dir.path().join("log");
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "nvtx_child_work",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV_VAR, "1")
        .env("CUPRUM_DEVICE", child_device())
        .env(cuprum::nvtx::INJECTION_ENV_VAR, &probe)
        .env(LOG_ENV_VAR, &log)
        .env_remove(cuprum::nvtx::NVTX_ENV_VAR)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the child failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let events = nvtx_probe::read_log(&log);
    let text = format!("{events:#?}");
    assert!(matches!(events.first(), Some(Event::Init(_))), "{text}");
    // Balanced: every pop ends the deepest open range, and none stays open.
    let mut depth = 0;
    for event in &events {
        match event {
            Event::Push { depth: d, .. } | Event::PushA { depth: d, .. } => {
                depth += 1;
                assert_eq!(*d, depth, "{text}");
            }
            Event::Pop { depth: d } => {
                depth -= 1;
                assert_eq!(*d, depth, "{text}");
            }
            _ => {}
        }
    }
    assert_eq!(depth, 0, "{text}");
    assert_eq!(pushed_inside(&events, "typed"), ["nvtx_double"], "{text}");
    assert_eq!(pushed_inside(&events, "raw"), ["nvtx_double"], "{text}");
    let tile = pushed_inside(&events, "tile");
    assert!(tile.contains(&"tile nvtx_add<B = 128>"), "{text}");
    assert_eq!(
        pushed_inside(&events, "tile nvtx_add<B = 128>"),
        ["nvtx_add"],
        "{text}"
    );
}

/// The child's backend: the parent's `CUPRUM_DEVICE`, so a GPU run checks the CUDA backend's
/// ranges (the emulator where it is unset and there is no GPU, as in CI).
fn child_device() -> String {
    std::env::var("CUPRUM_DEVICE").unwrap_or_else(|_| "auto".to_owned())
}
