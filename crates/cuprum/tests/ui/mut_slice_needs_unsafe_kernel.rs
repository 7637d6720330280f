// A `&mut [T]` parameter lets every thread write every element: only `unsafe` kernels take it.
use cuprum::simt::{kernel, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn scale(data: &mut [f32], factor: f32) {
        let i = thread::index_1d().get();
        data[i] = data[i] * factor;
    }
}

fn main() {}
