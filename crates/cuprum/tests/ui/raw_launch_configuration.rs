// `launch!` takes CUDA C++'s four launch values, `<<<grid, block, shared_bytes, stream>>>`:
// the stream is where the work is ordered, so it cannot be left out.
use cuprum::{CudaContext, DeviceBuffer, Module, launch};

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = Module::from_ptx(&ctx, "")?;
    let f = module.get_function("saxpy")?;
    let y = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
    unsafe { launch!(f<<<1, 32>>>(2.0f32, &y))? };
    Ok(())
}
