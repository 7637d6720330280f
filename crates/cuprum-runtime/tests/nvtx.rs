//! NVTX ranges end to end (`cuprum_runtime::nvtx`): a child process (this test binary, run
//! on one test) loads a fake profiler tool through `NVTX_INJECTION64_PATH`, as `nsys` and
//! `ncu` make a program do, then copies, launches and annotates (on the backend
//! `CUPRUM_DEVICE` selects: the emulator in CI, the GPU in `scripts/nvtx-gpu-check.sh`);
//! the tool's log must hold the ranges named by the kernel and the copies, with their colors
//! and payloads, properly nested inside the program's own range. Also: `CUPRUM_NVTX=0` keeps
//! the tool out, and a missing or foreign library changes nothing.
//!
//! The fake tool is compiled with `rustc` (`cuprum_testkit::nvtx_probe`) or prebuilt and named
//! by `CUPRUM_NVTX_PROBE`; where there is neither (a GPU machine running prebuilt binaries),
//! the tests that need it say so and pass.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{ctx, module, vecadd_kernel};
use cuprum_runtime::nvtx::{self, INJECTION_ENV_VAR, NVTX_ENV_VAR};
use cuprum_runtime::{DeviceBuffer, KernelArg, LaunchConfig1D, LoadedModule};
use cuprum_testkit::nvtx_probe::{self, Event, LOG_ENV_VAR};

/// Set in the child process, which then does [`child_work`].
const CHILD_ENV_VAR: &str = "CUPRUM_NVTX_TEST_CHILD";

const N: usize = 256;
const KERNEL_COLOR: u32 = 0xFF76_B900;
const COPY_COLOR: u32 = 0xFF1F_77B4;

/// What the child does under the tool: copies in, a launch, a mark, a device copy and a copy
/// out, all inside one range of its own; then it checks the kernel's result, so a tool that
/// broke a launch would fail it.
fn child_work() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = LoadedModule::load(&ctx, module(vec![vecadd_kernel("nvtx_vecadd", None)])).unwrap();
    let k = m.kernel_index("nvtx_vecadd").unwrap();
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| 2.0 * i as f32).collect();
    let outer = nvtx::range(format_args!("user {}", "outer"));
    let da = DeviceBuffer::from_host(&stream, &a).unwrap();
    let db = DeviceBuffer::from_host(&stream, &b).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&stream, N).unwrap();
    // SAFETY: the arguments match the kernel, and the output aliases no input.
    unsafe {
        m.launch(
            &stream,
            k,
            &LaunchConfig1D::for_len(N, 128).into(),
            &[
                KernelArg::slice(&da),
                KernelArg::slice(&db),
                KernelArg::slice_mut(&mut out),
            ],
        )
    }
    .unwrap();
    nvtx::mark("launched");
    let mut copy = DeviceBuffer::<f32>::zeroed(&stream, N).unwrap();
    copy.copy_from_device(&stream, &out).unwrap();
    let host = copy.to_host_vec(&stream).unwrap();
    drop(outer);
    for i in 0..N {
        assert_eq!(host[i], a[i] + b[i], "element {i}");
    }
}

#[test]
fn nvtx_child_work() {
    if std::env::var_os(CHILD_ENV_VAR).is_some() {
        child_work();
    }
}

/// The fake tool, built once per test into `dir`; `None` (and why, printed) where it cannot
/// be built.
fn probe(dir: &Path) -> Option<PathBuf> {
    match nvtx_probe::build(dir) {
        Ok(path) => Some(path),
        Err(why) => {
            eprintln!("skipped: the NVTX probe could not be built ({why})");
            None
        }
    }
}

/// Runs [`child_work`] in a child process with `env` set (`None`: removed) and returns what
/// the tool logged to `dir/log`.
fn run_child(dir: &Path, env: &[(&str, Option<&std::ffi::OsStr>)]) -> Vec<Event> {
    let log = dir.join("log");
    let _ = std::fs::remove_file(&log);
    let exe = std::env::current_exe().unwrap();
    let mut command = Command::new(exe);
    command
        .args([
            "--exact",
            "nvtx_child_work",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV_VAR, "1")
        .env("CUPRUM_DEVICE", child_device())
        .env(LOG_ENV_VAR, &log)
        .env_remove(NVTX_ENV_VAR);
    for (name, value) in env {
        match value {
            Some(v) => command.env(name, v),
            None => command.env_remove(name),
        };
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "the child failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("1 passed"),
        "the child ran no test:\n{stdout}"
    );
    nvtx_probe::read_log(&log)
}

fn push(depth: i32, color: Option<u32>, payload: Option<u64>, name: &str) -> Event {
    Event::Push {
        depth,
        color,
        payload,
        name: name.to_owned(),
    }
}

fn copy(name: &str) -> [Event; 2] {
    [
        push(2, Some(COPY_COLOR), Some(N as u64 * 4), name),
        Event::Pop { depth: 1 },
    ]
}

#[test]
fn launches_and_copies_push_ranges_named_by_the_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let Some(probe) = probe(dir.path()) else {
        return;
    };
    let events = run_child(dir.path(), &[(INJECTION_ENV_VAR, Some(probe.as_os_str()))]);
    let mut want = vec![
        Event::Init(vec![16, 9, 15, 7, 16, 7]),
        push(1, None, None, "user outer"),
    ];
    want.extend(copy("copy HtoD 1 KiB"));
    want.extend(copy("copy HtoD 1 KiB"));
    want.extend([
        push(2, Some(KERNEL_COLOR), None, "nvtx_vecadd"),
        Event::Pop { depth: 1 },
        Event::Mark("launched".to_owned()),
    ]);
    want.extend(copy("copy DtoD 1 KiB"));
    want.extend(copy("copy DtoH 1 KiB"));
    want.push(Event::Pop { depth: 0 });
    assert_eq!(events, want, "the probe's log, against what the child did");
}

#[test]
fn cuprum_nvtx_0_keeps_the_tool_out() {
    let dir = tempfile::tempdir().unwrap();
    let Some(probe) = probe(dir.path()) else {
        return;
    };
    for off in ["0", "off"] {
        let events = run_child(
            dir.path(),
            &[
                (INJECTION_ENV_VAR, Some(probe.as_os_str())),
                (NVTX_ENV_VAR, Some(off.as_ref())),
            ],
        );
        assert_eq!(events, [], "CUPRUM_NVTX={off}");
    }
}

#[test]
fn without_a_usable_tool_work_runs_as_before() {
    let dir = tempfile::tempdir().unwrap();
    // No tool; a path that is no library; a library without the entry point (this test
    // binary's own C library is one on every Unix).
    let missing = dir.path().join("no_such_library.so");
    let libc = if cfg!(target_os = "linux") {
        "libc.so.6"
    } else {
        "libSystem.dylib"
    };
    for value in [None, Some(missing.as_os_str()), Some(libc.as_ref())] {
        let events = run_child(dir.path(), &[(INJECTION_ENV_VAR, value)]);
        assert_eq!(events, [], "{INJECTION_ENV_VAR}={value:?}");
    }
    assert!(!nvtx::enabled() || std::env::var_os(INJECTION_ENV_VAR).is_some());
}

/// The child's backend: the parent's `CUPRUM_DEVICE`, so a GPU run checks the CUDA backend's
/// ranges (the emulator where it is unset and there is no GPU, as in CI).
fn child_device() -> String {
    std::env::var("CUPRUM_DEVICE").unwrap_or_else(|_| "auto".to_owned())
}
