// Reads in the split phase are at or above the boundary, of elements written before the
// barrier that entered it: a read below it (what other threads write in this level) is
// refused when index and boundary are constants, and the write phase has no reads at all.
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn read_below_the_boundary(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let split = tile.sync_split(32);
        for (_, slot) in split.mine_below() {
            *slot = 2.0;
        }
        if let Some(out) = y.get_mut(i) {
            *out = split[5];
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn read_above_before_the_barrier(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let v = tile.above(0);
        let _split = tile.sync_split(32);
        if let Some(out) = y.get_mut(i) {
            *out = v;
        }
    }
}

fn main() {}
