// The width of `get_mut_2d` must be the same in every thread: with a width of `x + 1`,
// threads (1, 0) and (0, 1) would both get element 1. Every access of one slice must also
// use the same width.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 2, block = (16, 16, 1))]
    pub fn thread_width(v: f32, mut y: DisjointSlice<f32>) {
        let idx = thread::index_2d();
        if let Some(out) = y.get_mut_2d(idx, idx.x() + 1) {
            *out = v;
        }
    }

    #[kernel]
    #[launch_contract(domain = 2, block = (16, 16, 1))]
    pub fn loaded_width(v: f32, widths: &[usize], mut y: DisjointSlice<f32>) {
        let idx = thread::index_2d();
        if let Some(out) = y.get_mut_2d(idx, widths[0]) {
            *out = v;
        }
    }

    #[kernel]
    #[launch_contract(domain = 2, block = (16, 16, 1))]
    pub fn two_widths(v: f32, width: usize, mut y: DisjointSlice<f32>) {
        let idx = thread::index_2d();
        if idx.y() % 2 == 0 {
            if let Some(out) = y.get_mut_2d(idx, width) {
                *out = v;
            }
        } else if let Some(out) = y.get_mut_2d(idx, width + 1) {
            *out = v;
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn two_methods(v: f32, width: usize, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
        if let Some(out) = y.get_mut_2d(thread::index_2d(), width) {
            *out = v;
        }
    }
}

fn main() {}
