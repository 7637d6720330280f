// Passing the output buffer as an input of the same launch is rejected by the borrow checker.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn saxpy(alpha: f32, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            *out = alpha * x[i.get()] + *out;
        }
    }
}

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut y = DeviceBuffer::from_host(&stream, &[1.0f32; 128])?;
    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_saxpy(LaunchConfig1D::new(1, 128, 0))?;
    module.saxpy(&stream, &prepared, 2.0, &y, &mut y)?;
    Ok(())
}
