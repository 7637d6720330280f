//! Device selection and the absence of a GPU: `CUPRUM_DEVICE` parsing, explicit backends,
//! and that asking for CUDA where there is none is an error, never a panic.

use cuprum_runtime::{BackendKind, CudaContext, DeviceLimits, DeviceSelection, Error};

#[test]
fn device_selection_parsing() {
    for (text, want) in [
        ("auto", DeviceSelection::Auto),
        ("", DeviceSelection::Auto),
        (" AUTO ", DeviceSelection::Auto),
        ("cuda", DeviceSelection::Cuda),
        ("CUDA", DeviceSelection::Cuda),
        ("gpu", DeviceSelection::Cuda),
        ("emu", DeviceSelection::Emulator),
        ("Emulator", DeviceSelection::Emulator),
        ("cpu", DeviceSelection::Emulator),
    ] {
        assert_eq!(DeviceSelection::parse(text).unwrap(), want, "`{text}`");
    }
    for bogus in ["bogus", "cuda0", "emu,cuda", "1"] {
        match DeviceSelection::parse(bogus) {
            Err(e @ Error::InvalidDeviceSelection { .. }) => {
                let message = e.to_string();
                assert!(message.contains(bogus), "{message}");
                assert!(
                    message.contains("auto") && message.contains("emu"),
                    "{message}"
                );
            }
            other => panic!("`{bogus}`: expected InvalidDeviceSelection, got {other:?}"),
        }
    }
    assert_eq!(DeviceSelection::default(), DeviceSelection::Auto);
}

#[test]
fn explicit_emulator() {
    let ctx = CudaContext::emulator();
    assert_eq!(ctx.backend(), BackendKind::Emulator);
    assert_eq!(ctx.limits(), &DeviceLimits::emulator());
    assert_eq!(ctx.limits().compute_capability, (9, 0));
    assert_eq!(ctx.limits().multiprocessor_count, 132);
    let ctx = CudaContext::with_selection(DeviceSelection::Emulator, 0).unwrap();
    assert_eq!(ctx.backend(), BackendKind::Emulator);
    assert!(matches!(
        CudaContext::with_selection(DeviceSelection::Emulator, 1),
        Err(Error::NoDevice {
            ordinal: 1,
            count: 1
        })
    ));
    assert_eq!(ctx.stats().launches, 0);
    assert!(!CudaContext::emulator().same_context(&ctx));
    assert!(ctx.same_context(&ctx.clone()));
}

#[test]
fn cuda_without_a_gpu_is_an_error_not_a_panic() {
    // Passes on every machine; where there is no usable GPU it checks the error variant.
    match CudaContext::cuda(0) {
        Ok(ctx) => {
            assert_eq!(ctx.backend(), BackendKind::Cuda);
            assert!(ctx.limits().compute_capability.0 >= 1);
            // An ordinal far beyond any machine is NoDevice.
            match CudaContext::cuda(4096) {
                Err(Error::NoDevice { ordinal, count }) => {
                    assert_eq!(ordinal, 4096);
                    assert!(count >= 1);
                }
                other => panic!("expected NoDevice, got {other:?}"),
            }
        }
        Err(e) => {
            assert!(
                matches!(e, Error::NoDriver { .. } | Error::NoDevice { .. }),
                "expected NoDriver or NoDevice, got {e:?}"
            );
            assert!(e.is_no_gpu());
            let message = e.to_string();
            assert!(message.contains("CUPRUM_DEVICE=emu"), "{message}");
            // Asking again gives the same answer (the probe is cached), still no panic.
            assert!(CudaContext::cuda(0).is_err());
            assert!(
                CudaContext::with_selection(DeviceSelection::Cuda, 0).is_err_and(|e| e.is_no_gpu())
            );
            // Auto falls back to the emulator for ordinal 0 only.
            let ctx = CudaContext::with_selection(DeviceSelection::Auto, 0).unwrap();
            assert_eq!(ctx.backend(), BackendKind::Emulator);
            assert!(CudaContext::with_selection(DeviceSelection::Auto, 1).is_err());
        }
    }
}

#[test]
fn default_context_follows_the_environment() {
    // Whatever CUPRUM_DEVICE says (the test runner sets it), `new` agrees with it.
    let selection = DeviceSelection::from_env();
    match (selection, CudaContext::new(0)) {
        (Ok(DeviceSelection::Emulator), Ok(ctx)) => {
            assert_eq!(ctx.backend(), BackendKind::Emulator)
        }
        (Ok(DeviceSelection::Cuda), Ok(ctx)) => assert_eq!(ctx.backend(), BackendKind::Cuda),
        (Ok(DeviceSelection::Cuda), Err(e)) => assert!(e.is_no_gpu(), "{e:?}"),
        (Ok(DeviceSelection::Auto), Ok(_)) => {}
        (Err(_), Err(Error::InvalidDeviceSelection { .. })) => {}
        (s, r) => panic!("selection {s:?} gave {r:?}"),
    }
}
