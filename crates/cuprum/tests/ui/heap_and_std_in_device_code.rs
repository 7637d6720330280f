// Heap allocation and string formatting do not exist on the device, nor do closures that
// change what they capture: the build says so.
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
        let mut total = 0.0f32;
        let mut add = |x: f32| total += x;
        add(2.0);
    }
}

fn main() {}
