//! A kernel that stops itself (a failed device bounds check) is a typed error naming the
//! kernel: `Emulator` on the emulator, `KernelFault` on a GPU. In its own test binary because
//! on a GPU the fault leaves the process's CUDA context unusable.

mod common;

use common::{ctx, module, trap_kernel};
use cuprum_runtime::{DeviceBuffer, DriverStatus, Error, KernelArg, LaunchConfig1D, LoadedModule};

#[test]
fn a_trap_names_the_kernel() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = LoadedModule::load(&ctx, module(vec![trap_kernel()])).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &[0u32; 64]).unwrap();
    // SAFETY: the arguments match; the kernel only traps.
    let launched = unsafe {
        m.launch(
            &stream,
            0,
            &LaunchConfig1D::new(2, 32, 0).into(),
            &[KernelArg::slice_mut(&mut out)],
        )
    };
    // A GPU reports the fault at the launch or at the next synchronization.
    let result = launched.and_then(|()| stream.synchronize());
    if let Err(e) = &result {
        eprintln!("the fault as users see it: {e}");
    }
    match result {
        Err(e @ Error::Emulator { .. }) => {
            let message = e.to_string();
            assert!(message.contains("trap_kernel"), "{message}");
            assert!(message.contains("out[i + out.len()]"), "{message}");
        }
        Err(e @ Error::KernelFault { status, .. }) => {
            // A trap is one of the driver's sticky kernel failures, with its code to match on.
            assert!(
                [
                    DriverStatus::ILLEGAL_INSTRUCTION,
                    DriverStatus::LAUNCH_FAILED,
                    DriverStatus::ASSERT,
                ]
                .contains(&status),
                "{status}"
            );
            eprintln!("the trap's status: {status}");
            let message = e.to_string();
            assert!(message.contains("trap_kernel"), "{message}");
            assert!(message.contains("unusable"), "{message}");
            // Later calls fail too, without panicking.
            assert!(out.to_host_vec(&stream).is_err());
        }
        other => panic!("expected a kernel error, got {other:?}"),
    }
}
