// A generic struct's type parameter stands for plain data: an instantiation whose argument
// would be a slice reference (which Rust allows on the host) is refused, with what to store
// instead.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel, thread};

#[cuda_module]
mod kernels {
    use super::*;

    #[derive(Clone, Copy)]
    pub struct Holder<T> {
        pub v: T,
        pub weight: f32,
    }

    #[kernel]
    pub fn weigh(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = y.get_mut(i) {
            let h = Holder { v: x, weight: 0.5 };
            *o = h.v[i.get()] * h.weight;
        }
    }
}

fn main() {}
