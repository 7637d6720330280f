// A `Prepared` configuration only fits the kernel it was checked for.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn fill(v: f32, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (32, 1, 1))]
    pub fn negate(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            *out = -x[i.get()];
        }
    }
}

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut y = DeviceBuffer::from_host(&stream, &[1.0f32; 256])?;
    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_negate(LaunchConfig1D::new(8, 32, 0))?;
    module.fill(&stream, &prepared, 2.0, &mut y)?;
    Ok(())
}
