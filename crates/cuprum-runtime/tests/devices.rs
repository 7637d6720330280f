//! Device enumeration: `device_count` and the emulator's virtual devices
//! (`CUPRUM_EMU_DEVICES`). The environment is the process's, so each case runs this test
//! binary again as a child with its own variables (the `child_*` tests, ignored unless run
//! that way).

use std::process::Command;

use cuprum_runtime::{
    BackendKind, CudaContext, DeviceBuffer, Error, device_count, emulator_device_count,
};

const ROLE_ENV: &str = "CUPRUM_DEVICES_TEST_CHILD";

/// Runs child test `name` with `CUPRUM_DEVICE=emu` and `CUPRUM_EMU_DEVICES=devices` (unset
/// for `None`); panics with its output unless it passed.
fn child(name: &str, devices: Option<&str>) {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the test binary: {e}"));
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--ignored", "--test-threads=1"])
        .env(ROLE_ENV, "1")
        .env("CUPRUM_DEVICE", "emu");
    match devices {
        Some(n) => cmd.env("CUPRUM_EMU_DEVICES", n),
        None => cmd.env_remove("CUPRUM_EMU_DEVICES"),
    };
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running the child: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "child {name} failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn in_child() -> bool {
    std::env::var_os(ROLE_ENV).is_some()
}

#[test]
fn the_emulator_offers_the_devices_cuprum_emu_devices_asks_for() {
    child("child_three_devices", Some("3"));
    child("child_one_device_by_default", None);
    for bad in ["0", "65", "two", "-1", ""] {
        child("child_refuses_the_count", Some(bad));
    }
}

/// In this process's own environment (the GPU under gpu-pack, the emulator in CI): the
/// count is the backend's, every ordinal below it opens a context on that backend, and the
/// next one is refused.
#[test]
fn the_count_is_what_the_backend_opens() {
    if in_child() {
        return;
    }
    let n = device_count().unwrap_or_else(|e| panic!("device_count: {e}"));
    let first = CudaContext::new(0).unwrap_or_else(|e| panic!("device 0: {e}"));
    println!("{n} device(s) on {:?}", first.backend());
    assert!(n >= 1);
    for i in 1..n {
        let ctx = CudaContext::new(i).unwrap_or_else(|e| panic!("device {i} of {n}: {e}"));
        assert_eq!((ctx.ordinal(), ctx.backend()), (i, first.backend()));
    }
    if first.backend() == BackendKind::Emulator {
        assert_eq!(emulator_device_count().ok(), Some(n));
    }
    match CudaContext::new(n) {
        Err(Error::NoDevice { .. }) => {}
        Err(e) => panic!("device {n} of {n}: {e}, not NoDevice"),
        Ok(_) => panic!("device {n} of {n} opened"),
    }
}

#[test]
#[ignore = "run by the_emulator_offers_the_devices_cuprum_emu_devices_asks_for"]
fn child_three_devices() {
    assert!(in_child());
    assert_eq!(emulator_device_count().ok(), Some(3));
    assert_eq!(device_count().ok(), Some(3));
    let ctxs: Vec<CudaContext> = (0..3)
        .map(|i| CudaContext::new(i).unwrap_or_else(|e| panic!("device {i}: {e}")))
        .collect();
    for (i, ctx) in ctxs.iter().enumerate() {
        assert_eq!(ctx.ordinal(), i);
        assert_eq!(ctx.backend(), BackendKind::Emulator);
    }
    // Each device has its own memory: values written on one stay there, and its buffers are
    // refused by another device's streams.
    let streams: Vec<_> = ctxs.iter().map(CudaContext::default_stream).collect();
    let bufs: Vec<DeviceBuffer<u32>> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            DeviceBuffer::from_host(s, &[i as u32 * 10, i as u32 * 10 + 1])
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    for (i, (b, s)) in bufs.iter().zip(&streams).enumerate() {
        assert_eq!(
            b.to_host_vec(s).ok(),
            Some(vec![i as u32 * 10, i as u32 * 10 + 1])
        );
    }
    match bufs[1].to_host_vec(&streams[2]) {
        Err(Error::ContextMismatch) => {}
        other => panic!("a device-1 buffer on device 2's stream: {other:?}"),
    }
    match CudaContext::new(3) {
        Err(Error::NoDevice {
            ordinal: 3,
            count: 3,
        }) => {}
        other => panic!("ordinal 3 of 3: {other:?}"),
    }
}

#[test]
#[ignore = "run by the_emulator_offers_the_devices_cuprum_emu_devices_asks_for"]
fn child_one_device_by_default() {
    assert!(in_child());
    assert_eq!(device_count().ok(), Some(1));
    assert!(CudaContext::new(0).is_ok());
    match CudaContext::new(1) {
        Err(Error::NoDevice {
            ordinal: 1,
            count: 1,
        }) => {}
        other => panic!("ordinal 1 of 1: {other:?}"),
    }
}

#[test]
#[ignore = "run by the_emulator_offers_the_devices_cuprum_emu_devices_asks_for"]
fn child_refuses_the_count() {
    assert!(in_child());
    for result in [emulator_device_count(), device_count()] {
        match result {
            Err(e @ Error::InvalidEmulatorDevices { max: 64, .. }) => {
                assert!(e.to_string().contains("CUPRUM_EMU_DEVICES"), "{e}");
            }
            other => panic!("an invalid count: {other:?}"),
        }
    }
    match CudaContext::new(0) {
        Err(Error::InvalidEmulatorDevices { .. }) => {}
        other => panic!("a context under an invalid count: {other:?}"),
    }
}
