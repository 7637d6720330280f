// Heap allocation, string formatting and closures do not exist on the device: the build
// says so.
use cuprum::simt::{DisjointSlice, kernel};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn heap(mut y: DisjointSlice<f32>) {
        let v: Vec<f32> = Vec::new();
    }

    #[kernel]
    pub fn format(mut y: DisjointSlice<f32>) {
        let s = format!("hello from the GPU");
    }

    #[kernel]
    pub fn closure(mut y: DisjointSlice<f32>) {
        let f = |x: f32| x * 2.0;
    }
}

fn main() {}
