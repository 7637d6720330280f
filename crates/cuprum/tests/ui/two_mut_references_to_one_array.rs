// References passed to device helpers are lowered as the places they name, which is sound
// because rustc checks the kernel's host copy: two `&mut` to elements of one local array at
// once do not compile (cuda-samples' `Comparator(s_key[i], s_key[j])` is written with
// `SharedArray::get_mut`, or through a local copy).
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel, thread};

#[cuda_module]
mod kernels {
    use super::*;

    pub fn order(a: &mut u32, b: &mut u32) {
        if *a > *b {
            let t = *a;
            *a = *b;
            *b = t;
        }
    }

    #[kernel]
    pub fn sort_pair(x: &[u32], mut y: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let mut keys = [x[0], x[1]];
        let j = i.get() % 2;
        order(&mut keys[j], &mut keys[1 - j]);
        if let Some(o) = y.get_mut(i) {
            *o = keys[0];
        }
    }
}

fn main() {}
