// A kernel without a launch contract can only be launched in an `unsafe` block.
use cuprum::simt::{DisjointSlice, kernel, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn fill(v: f32, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }
}

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut y = DeviceBuffer::from_host(&stream, &[1.0f32; 256])?;
    let module = kernels::load(&ctx)?;
    module.fill(&stream, LaunchConfig1D::new(1, 256, 0), 2.0, &mut y)?;
    Ok(())
}
