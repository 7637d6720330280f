// TMA copies are `unsafe` (a load writes shared memory after it returns), and a kernel that
// takes cuda-oxide's `*const TmaDescriptor` has only `unsafe` launches, even with a contract:
// nothing checks what the pointer points to.
use cuprum::simt::barrier::Barrier;
use cuprum::simt::tma::{TensorMap, TmaDescriptor, cp_async_bulk_tensor_1d_g2s};
use cuprum::simt::{DisjointSlice, SharedArray, kernel, launch_contract, thread};
use cuprum::{CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (32, 1, 1))]
    pub fn through_pointer(map: *const TmaDescriptor, mut y: DisjointSlice<f32>) {
        let _ = map;
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = 1.0;
        }
    }

    #[kernel]
    pub fn copy_outside_unsafe(map: TensorMap<f32, 1>) {
        static mut TILE: SharedArray<f32, 32, 128> = SharedArray::UNINIT;
        static mut BAR: Barrier = Barrier::UNINIT;
        cp_async_bulk_tensor_1d_g2s(&raw mut TILE as *mut u8, map.as_ptr(), 0, &raw mut BAR);
    }
}

fn main() -> cuprum::Result<()> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut y = DeviceBuffer::from_host(&stream, &[1.0f32; 32])?;
    let module = kernels::load(&ctx)?;
    let prepared = module.prepare_through_pointer(LaunchConfig1D::new(1, 32, 0))?;
    module.through_pointer(&stream, &prepared, std::ptr::null(), &mut y)?;
    Ok(())
}
