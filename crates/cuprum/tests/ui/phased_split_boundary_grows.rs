// Each level of a split phase keeps at most the elements of the one before (`s2 <= s`),
// and the first boundary is at most the array's length: constants that break either are
// refused at build time (run-time values are checked when the kernel runs).
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn next_level_grows(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let split = tile.sync_split(16);
        let split = split.sync_split(32);
        if let Some(out) = y.get_mut(i) {
            *out = split.above(0);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn boundary_past_the_end(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let split = tile.sync_split(65);
        if let Some(out) = y.get_mut(i) {
            *out = split.get(64);
        }
    }
}

fn main() {}
