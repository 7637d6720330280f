// `index_1d()` is `blockIdx.x * blockDim.x + threadIdx.x`: with a block of two rows, threads
// (x, 0) and (x, 1) would get the same element, so the kernel does not compile.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (32, 2, 1))]
    pub fn fill(v: f32, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }
}

fn main() {}
