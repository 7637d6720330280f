// A mutable view borrows its buffer exclusively: no other view of it (nor the buffer) may be
// used while it lives, so a kernel's output elements are its alone. Disjoint mutable views
// come from `split_at_mut`.
use cuprum::{CudaContext, DeviceBuffer};

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut y = DeviceBuffer::<f32>::zeroed(&stream, 8)?;
    let mut low = y.slice_mut(0..4)?;
    let overlapping = y.slice(2..6)?;
    low.copy_from_host(&stream, &[1.0; 4])?;
    println!("{}", overlapping.len());
    Ok(())
}
