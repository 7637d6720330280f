// A device struct cannot hold a trait object (the GPU has no vtables): refused at the field,
// with what to store instead.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel, thread};

#[cuda_module]
mod kernels {
    use super::*;

    pub struct Op {
        pub f: Box<dyn Fn(f32) -> f32>,
        pub scale: f32,
    }

    #[kernel]
    pub fn apply(x: f32, mut y: DisjointSlice<f32>) {
        if let Some(o) = y.get_mut(thread::index_1d()) {
            *o = x;
        }
    }
}

fn main() {}
