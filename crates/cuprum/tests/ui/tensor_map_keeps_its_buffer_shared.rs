// A `TensorMap` borrows its buffer as `&[T]` does, so while it lives the buffer cannot also
// be a kernel's writable argument: the launch's check that a stored-through map overlaps no
// other argument leaves writable slices to this borrow.
use cuprum::simt::tma::TensorMap;
use cuprum::simt::{DisjointSlice, kernel, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn store_and_write(map: TensorMap<u32, 1>, mut out: DisjointSlice<u32>) {
        let _ = map;
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = 1;
        }
    }
}

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut buf = DeviceBuffer::from_host(&stream, &[0u32; 64])?;
    let map = cuprum::TensorMap::<u32, 1>::tiled(&buf, [64], [32])?;
    let module = kernels::load(&ctx)?;
    // SAFETY: (the launch is raw); the borrow is refused before anything runs.
    unsafe { module.store_and_write(&stream, LaunchConfig::for_num_elems(64), &map, &mut buf)? };
    Ok(())
}
