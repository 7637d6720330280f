// `DisjointSlice::get_mut` takes only the thread's own index, so threads cannot collide.
use cuprum::simt::{DisjointSlice, kernel, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn everyone_writes_zero(mut y: DisjointSlice<f32>) {
        let _ = thread::index_1d();
        if let Some(out) = y.get_mut(0usize) {
            *out = 1.0;
        }
    }
}

fn main() {}
