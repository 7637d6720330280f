// `sync()` consumes the array in its old phase: writing through the old handle, or through
// an element reference kept from the write phase, after the barrier does not compile.
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn write_through_the_old_phase(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        let read = tile.sync();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        if let Some(out) = y.get_mut(i) {
            *out = read[63];
        }
    }
}

fn main() {}
