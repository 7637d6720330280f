// Heap allocation, printing and closures do not exist on the device: the build says so.
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
    pub fn print(mut y: DisjointSlice<f32>) {
        println!("hello from the GPU");
    }

    #[kernel]
    pub fn closure(mut y: DisjointSlice<f32>) {
        let f = |x: f32| x * 2.0;
    }
}

fn main() {}
