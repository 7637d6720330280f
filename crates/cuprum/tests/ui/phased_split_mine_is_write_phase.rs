// In the split phase the elements a thread may write are those below the boundary:
// `mine()`, the write phase's loop over all of them, is refused.
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn mine_in_the_split_phase(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let mut split = tile.sync_split(32);
        for (_, slot) in split.mine() {
            *slot = 1.0;
        }
        if let Some(out) = y.get_mut(i) {
            *out = split[40];
        }
    }
}

fn main() {}
