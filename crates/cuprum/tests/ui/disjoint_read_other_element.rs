// A `DisjointSlice` is read only where the thread owns it: through the `&mut T` a pattern
// hands out. Indexing it (another thread's element) and `get` do not exist.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn blur_in_place(mut x: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let right = x[i.get() + 1];
        x.update(i, |v| (v + right) * 0.5);
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn peek(mut x: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(left) = x.get(i.get() - 1) {
            x.update(i, |v| v + *left);
        }
    }
}

fn main() {}
