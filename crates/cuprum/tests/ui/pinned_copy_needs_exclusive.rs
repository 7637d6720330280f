// A copy into pinned memory takes it `&mut`: no slice of it may be alive while the device
// may write it (reading it afterwards waits for the copy).
use cuprum::{CudaContext, DeviceBuffer, PinnedBuffer};

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let y = DeviceBuffer::<f32>::zeroed(&stream, 4)?;
    let mut host = PinnedBuffer::<f32>::zeroed(&ctx, 4)?;
    let seen = host.as_slice()?;
    y.copy_to_pinned(&stream, &mut host)?;
    println!("{}", seen[0]);
    Ok(())
}
