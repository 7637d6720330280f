// A `Prepared` is the proof that `prepare_*` checked the configuration: safe code cannot make
// one any other way.
use cuprum::simt::{DisjointSlice, Prepared, kernel, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (32, 1, 1))]
    pub fn fill(v: f32, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }
}

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut y = DeviceBuffer::from_host(&stream, &[1.0f32; 64])?;
    let module = kernels::load(&ctx)?;
    // A 2-D block `prepare_fill` refuses.
    let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 2, 1), shared_mem_bytes: 0 };
    let prepared = Prepared::<kernels::FillKernel>::__new_unchecked(config);
    module.fill(&stream, &prepared, 2.0, &mut y)?;
    Ok(())
}
