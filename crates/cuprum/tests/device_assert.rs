//! A failed `assert!` in device code stops the kernel; the host gets a typed error naming the
//! kernel (and, from the emulator, the thread and the message). Alone in its test binary: on a
//! GPU the trap leaves the CUDA context unusable, as CUDA specifies.

use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, Error, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn checked_sqrt(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = y.get_mut(i) {
            let v = x[i.get()];
            assert!(v >= 0.0, "negative input to checked_sqrt");
            *o = v.sqrt();
        }
    }
}

#[test]
fn a_failed_device_assert_is_a_typed_error() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let m = kernels::load(&ctx)?;
    let mut x = vec![4.0f32; 200];
    x[133] = -1.0;
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut y = DeviceBuffer::from_host(&stream, &vec![f32::NAN; 200])?;
    let prepared = m.prepare_checked_sqrt(LaunchConfig1D::new(4, 64, 0))?;
    let result = m
        .checked_sqrt(&stream, &prepared, &dx, &mut y)
        .and_then(|()| stream.synchronize());
    match result {
        Err(Error::Emulator { kernel, source }) => {
            assert_eq!(kernel, "checked_sqrt");
            let text = source.to_string();
            assert!(text.contains("negative input to checked_sqrt"), "{text}");
            assert!(
                text.contains("[5, 0, 0]"),
                "thread 133 is thread 5 of block 2: {text}"
            );
        }
        Err(Error::KernelFault { kernel, .. }) => assert_eq!(kernel, "checked_sqrt"),
        Err(other) => panic!("unexpected error: {other}"),
        Ok(()) => panic!("the failed assertion went unnoticed"),
    }
    Ok(())
}
