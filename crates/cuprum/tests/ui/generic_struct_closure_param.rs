// A type parameter of a device struct stands for plain data (a number, specialized per
// use): one bounded by a closure trait would hold a closure, which device memory cannot, and
// the message says what to store instead.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel, thread};

#[cuda_module]
mod kernels {
    use super::*;

    #[derive(Clone, Copy)]
    pub struct Mapper<F: Fn(f32) -> f32> {
        pub f: F,
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
