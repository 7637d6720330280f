// A generic kernel's launch contract may name its const parameters; a configuration prepared
// for one value of them does not launch another. A block dimension that is neither a literal,
// a module constant nor a const parameter of the kernel is refused.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (B, 1, 1))]
    pub fn fill<const B: u32>(v: f32, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }
}

#[cuda_module]
mod unknown_dimension {
    use super::*;

    const WIDTH: u32 = 64;

    #[kernel]
    #[launch_contract(domain = 1, block = (WIDTH / 2, 1, 1))]
    pub fn half_fill(v: f32, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (HEIGHT, 1, 1))]
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
    let prepared = module.prepare_fill::<32>(LaunchConfig1D::new(8, 32, 0))?;
    module.fill::<64>(&stream, &prepared, 2.0, &mut y)?;
    Ok(())
}
