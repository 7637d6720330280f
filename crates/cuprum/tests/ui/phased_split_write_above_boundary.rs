// In the split phase a thread writes only its own elements below the boundary, through
// `mine_below()`: elements at or above it are the read side, which has no way to write
// (no `split[i] = ..`), and `mine()`, the write phase's loop, is refused.
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn assign_above_the_boundary(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let mut split = tile.sync_split(32);
        split[32 + thread::threadIdx_x() as usize] = 0.0;
        if let Some(out) = y.get_mut(i) {
            *out = split[40];
        }
    }
}

fn main() {}
