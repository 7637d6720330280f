// What phased shared arrays do not hold, each refused with what to write instead: 2-D tiles
// of aggregates, and atomics on aggregates.
use cuprum::simt::{DisjointSlice, SharedWrite, SharedWrite2d, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn tile_of_vectors(x: &[[f32; 4]], mut y: DisjointSlice<[f32; 4]>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite2d::<[f32; 4], 8, 8>::new();
        for (_, _, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let tile = tile.sync();
        if let Some(out) = y.get_mut(i) {
            *out = tile[0][0];
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn atomics_on_vectors(x: &[[f32; 4]], mut y: DisjointSlice<[f32; 4]>) {
        let i = thread::index_1d();
        let mut bins = SharedWrite::<[f32; 4], 64>::new();
        for (_, slot) in bins.mine() {
            *slot = x[i.get()];
        }
        let bins = bins.sync_atomic();
        let bins = bins.sync();
        if let Some(out) = y.get_mut(i) {
            *out = bins[0];
        }
    }
}

fn main() {}
