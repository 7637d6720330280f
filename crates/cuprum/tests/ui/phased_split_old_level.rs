// `sync_split` and `sync` consume the split phase: reading through the old level after the
// barrier does not compile.
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn read_through_the_old_level(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let split = tile.sync_split(32);
        let next = split.sync_split(16);
        if let Some(out) = y.get_mut(i) {
            *out = split.above(0) + next.above(0);
        }
    }
}

fn main() {}
