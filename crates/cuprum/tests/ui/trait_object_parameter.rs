// A trait object cannot cross to the device: kernel parameters are scalars and slices.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn dynamic(f: &dyn Fn(f32) -> f32, mut y: DisjointSlice<f32>) {}
}

fn main() {}
