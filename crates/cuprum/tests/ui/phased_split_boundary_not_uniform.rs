// A split boundary must be the same in every thread of the block: with one per thread,
// one thread's reads at or above its boundary could meet another's writes below its own.
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn boundary_from_the_thread_index(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let split = tile.sync_split(thread::threadIdx_x() as usize);
        if let Some(out) = y.get_mut(i) {
            *out = split.above(0);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn boundary_from_loaded_data(x: &[f32], s: &[u32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let split = tile.sync_split(32);
        let split = split.sync_split(s[0] as usize);
        if let Some(out) = y.get_mut(i) {
            *out = split.above(0);
        }
    }
}

fn main() {}
