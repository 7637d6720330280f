// A raw launch (`launch!`) hands a kernel arguments cuprum cannot check against what the
// kernel does with them: it is an `unsafe` call, so safe code cannot make one.
use cuprum::{CudaContext, DeviceBuffer, Module, launch};

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = Module::from_ptx(&ctx, "")?;
    let f = module.get_function("saxpy")?;
    let y = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
    launch!(f<<<1, 32, 0, stream>>>(2.0f32, &y, &y, 4i32))?;
    Ok(())
}
