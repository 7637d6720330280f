// What cuTile Rust makes `unsafe` is `unsafe` here too (E0133 without an `unsafe` block):
// submitting an operation without waiting for it (`DeviceOp::execute`: its output may be
// memory the device still writes), pushing a raw device address for a kernel
// (`push_device_ptr`: nothing orders or bounds it), and borrowing another framework's memory
// (`Tensor::from_foreign`: nothing else may touch it while cuprum's work runs).
use std::sync::Arc;

use cuprum::tile::cuda_async::device_buffer::DeviceAllocation;
use cuprum::tile::cuda_async::device_operation::{DeviceOp, ExecutionContext};
use cuprum::tile::cuda_async::launch::AsyncKernelLaunch;
use cuprum::tile::cuda_core::Function;
use cuprum::tile::prelude::*;

fn submit(ctx: &ExecutionContext) -> Result<Tensor<f32>, Error> {
    api::zeros::<f32>(&[4]).execute(ctx)
}

fn push(f: Arc<Function>) {
    let mut launch = AsyncKernelLaunch::new(f);
    launch.push_device_ptr(0x1000);
}

fn borrow(owner: Arc<dyn DeviceAllocation>) -> Tensor<f32> {
    Tensor::<f32>::from_foreign(owner, vec![4], vec![1])
}

fn main() {}
