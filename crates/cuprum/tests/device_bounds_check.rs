//! A failed `slice[i]` bounds check on the device stops the kernel and surfaces on the host as
//! a typed error naming the kernel. Alone in its test binary: on a GPU the trap leaves the
//! CUDA context unusable, as CUDA itself specifies, so nothing else may share the process.

use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, Error, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn gather(index: &[u32], src: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = src[index[i.get()] as usize];
        }
    }
}

#[test]
fn out_of_bounds_index_is_a_typed_error_naming_the_kernel() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let n = 1000;
    let src: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut index: Vec<u32> = (0..n as u32).rev().collect();
    index[617] = n as u32 + 5; // one thread reads past the end
    let (di, ds) = (
        DeviceBuffer::from_host(&stream, &index)?,
        DeviceBuffer::from_host(&stream, &src)?,
    );
    let mut out = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_gather(LaunchConfig1D::new(8, 128, 0))?;
    let result = module
        .gather(&stream, &prepared, &di, &ds, &mut out)
        .and_then(|()| stream.synchronize());
    let error = match result {
        Ok(()) => panic!("the out-of-bounds read went unnoticed"),
        Err(e) => e,
    };
    let message = error.to_string();
    assert!(
        message.contains("gather"),
        "the error must name the kernel: {message}"
    );
    match error {
        Error::Emulator { kernel, source } => {
            assert_eq!(kernel, "gather");
            let detail = source.to_string();
            // The emulator also names the thread and the index.
            assert!(detail.contains("1005"), "{detail}");
            assert!(
                detail.contains("617") || detail.contains("[105, 0, 0]"),
                "{detail}"
            );
        }
        Error::KernelFault { kernel, .. } => assert_eq!(kernel, "gather"),
        other => panic!("unexpected error kind: {other}"),
    }
    Ok(())
}
