// The phase of a phased shared array is its type: a write-phase array is reached only
// through the elements a thread owns, a read-phase one is never written, an atomic-phase one
// is reached only through atomics, and `sync()` moves the array into its next phase, so no
// handle of the old phase survives the barrier.
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    // Reading another thread's element before the barrier.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn read_in_the_write_phase(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        if let Some(out) = y.get_mut(i) {
            *out = tile[63];
        }
    }

    // Writing after the barrier, while other threads read.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn write_in_the_read_phase(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let mut tile = tile.sync();
        for (_, slot) in tile.mine() {
            *slot = 0.0;
        }
        tile[0] = 1.0;
        if let Some(out) = y.get_mut(i) {
            *out = tile[63];
        }
    }

    // Reading a bin while other threads may still be adding to it.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn read_in_the_atomic_phase(x: &[u32], mut y: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let mut bins = SharedWrite::<u32, 64>::new();
        for (_, slot) in bins.mine() {
            *slot = 0;
        }
        let bins = bins.sync_atomic();
        bins.fetch_add((x[i.get()] % 64) as usize, 1);
        if let Some(out) = y.get_mut(i) {
            *out = bins[0];
        }
    }
}

fn main() {}
