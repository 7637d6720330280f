//! Vector addition: the first program of every GPU programming system, in cuprum.
//!
//! Runs on the GPU when there is one, otherwise on cuprum's CPU emulator
//! (`CUPRUM_DEVICE=auto|cuda|emu` chooses), and checks every element against the CPU.

use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = c.get_mut(i) {
            *out = a[i.get()] + b[i.get()];
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const N: usize = 1024;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let a: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..N).map(|i| 1000.0 - i as f32).collect();
    let da = DeviceBuffer::from_host(&stream, &a)?;
    let db = DeviceBuffer::from_host(&stream, &b)?;
    // Poisoned, so an element the kernel fails to write cannot pass the check.
    let mut dc = DeviceBuffer::from_host(&stream, &vec![f32::NAN; N])?;

    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_vecadd(LaunchConfig1D::new((N as u32).div_ceil(256), 256, 0))?;
    module.vecadd(&stream, &prepared, &da, &db, &mut dc)?;
    let c = dc.to_host_vec(&stream)?;

    let wrong = (0..N).filter(|&i| c[i] != a[i] + b[i]).count();
    if wrong != 0 {
        return Err(format!(
            "FAILED: {wrong} of {N} elements wrong on {:?}",
            ctx.backend()
        )
        .into());
    }
    println!("PASSED: all {N} elements correct ({:?})", ctx.backend());
    Ok(())
}
