// In a 2-D domain the grid may have several blocks along y, which all see the same
// `index_1d()`: writing a `DisjointSlice` with it does not compile.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 2, block = (256, 1, 1))]
    pub fn fill(v: f32, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }

    #[kernel]
    #[launch_contract(domain = 2, block = (16, 8, 2))]
    pub fn fill_2d(v: f32, width: usize, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut_2d(thread::index_2d(), width) {
            *out = v;
        }
    }
}

fn main() {}
