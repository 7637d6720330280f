// Phased shared memory is safe only if every thread of a block passes the same barriers in
// the same order; in a kernel that uses it, each barrier below is refused because some
// threads of a block may skip it.
use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_contract, sync_threads, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    // The usual early exit: threads past the end leave, the rest wait at a barrier forever
    // or, worse, pair with a later one.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn sync_after_early_return(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if i.get() >= x.len() {
            return;
        }
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        let tile = tile.sync();
        if let Some(out) = y.get_mut(i) {
            *out = tile[0];
        }
    }

    // A phase change under a condition on the thread index.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn sync_under_a_thread_condition(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        if thread::threadIdx_x() < 32 {
            let tile = tile.sync();
            if let Some(out) = y.get_mut(i) {
                *out = tile[0];
            }
        }
    }

    // A plain barrier in a loop whose trip count depends on loaded data: threads leave it
    // after different numbers of barriers.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn plain_barrier_in_a_data_dependent_loop(x: &[u32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = 1.0;
        }
        let mut k = 0;
        while k < x[i.get()] {
            sync_threads();
            k += 1;
        }
        let tile = tile.sync();
        if let Some(out) = y.get_mut(i) {
            *out = tile[0];
        }
    }

    // A helper with a barrier, called by part of the block.
    pub fn wait_for_block() {
        sync_threads();
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn helper_barrier_under_a_thread_condition(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let mut tile = SharedWrite::<f32, 64>::new();
        for (_, slot) in tile.mine() {
            *slot = x[i.get()];
        }
        if x[i.get()] > 0.0 {
            wait_for_block();
        }
        let tile = tile.sync();
        if let Some(out) = y.get_mut(i) {
            *out = tile[0];
        }
    }
}

fn main() {}
