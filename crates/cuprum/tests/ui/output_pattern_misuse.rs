// The output patterns of `DisjointSlice` keep one thread per element only when used as
// their rules say; each misuse below is refused when the module is compiled.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    // Two patterns on one output: thread 1's element is also in thread 0's chunk.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn two_patterns(v: f32, mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            *out = v;
        }
        for (_, out) in y.chunk_mut::<4>(i) {
            *out += v;
        }
    }

    // Two chunk sizes on one output overlap just as well.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn two_chunk_sizes(v: f32, mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        for (_, out) in y.chunk_mut::<4>(i) {
            *out = v;
        }
        for (_, out) in y.chunk_mut::<2>(i) {
            *out += v;
        }
    }

    // Chunks per 1-D index where the block has two rows: threads (x, 0) and (x, 1) would
    // own one chunk.
    #[kernel]
    #[launch_contract(domain = 1, block = (32, 2, 1))]
    pub fn chunk_with_a_2d_block(v: f32, mut y: DisjointSlice<f32>) {
        for (_, out) in y.chunk_mut::<4>(thread::index_1d()) {
            *out = v;
        }
    }

    // A grid-stride loop in a 2-D domain: blocks along y share `index_1d()`.
    #[kernel]
    #[launch_contract(domain = 2, block = (64, 1, 1))]
    pub fn grid_stride_in_a_2d_domain(v: f32, mut y: DisjointSlice<f32>) {
        for (_, out) in y.grid_stride_mut() {
            *out = v;
        }
    }

    // Tiles per 2-D index where the block is two deep along z.
    #[kernel]
    #[launch_contract(domain = 2, block = (8, 8, 2))]
    pub fn tile_with_a_3d_block(v: f32, width: usize, mut c: DisjointSlice<f32>) {
        for (_, _, out) in c.tile_mut::<4, 4>(thread::index_2d(), width) {
            *out = v;
        }
    }

    // A tile width that differs between threads.
    #[kernel]
    #[launch_contract(domain = 2, block = (8, 8, 1))]
    pub fn tile_width_per_thread(v: f32, mut c: DisjointSlice<f32>) {
        let idx = thread::index_2d();
        for (_, _, out) in c.tile_mut::<2, 2>(idx, idx.x() + 8) {
            *out = v;
        }
    }

    // A shape the unrolled loop cannot have.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn empty_chunk(v: f32, mut y: DisjointSlice<f32>) {
        for (_, out) in y.chunk_mut::<0>(thread::index_1d()) {
            *out = v;
        }
    }

    // `break` would leave part of an unrolled chunk unwritten in one copy and not another.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn break_in_a_chunk(v: f32, mut y: DisjointSlice<f32>) {
        for (j, out) in y.chunk_mut::<4>(thread::index_1d()) {
            if j == 2 {
                break;
            }
            *out = v;
        }
    }

    // The elected element taken outside the `if let` that elects its thread.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn block_result_outside_the_election(v: f32, mut sums: DisjointSlice<f32>) {
        let elected = sums.block_result_mut();
        if let Some(out) = elected {
            *out = v;
        }
    }

    // A block result beside per-thread elements: thread 1 of block 0 and thread 0 of
    // block 1 would both reach element 1.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn block_result_and_get_mut(v: f32, mut y: DisjointSlice<f32>) {
        if let Some(out) = y.block_result_mut() {
            *out = v;
        }
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }

    // Block tiles whose width differs between threads: two threads' tiles could overlap.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn block_tile_of_a_thread_dependent_width(v: f32, mut y: DisjointSlice<f32>) {
        let w = thread::threadIdx_x() as usize + 1;
        for (_, _, out) in y.block_tile_mut(1, w, w) {
            *out = v;
        }
    }

    // Block tiles beside per-thread elements: thread 1 of block 0 would reach element 1 of
    // block 0's tile, which `get_mut` gives thread 1 as well, and so on across blocks.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn block_tile_and_get_mut(v: f32, n: usize, mut y: DisjointSlice<f32>) {
        for (_, _, out) in y.block_tile_mut(1, n, n) {
            *out = v;
        }
        if let Some(out) = y.get_mut(thread::index_1d()) {
            *out = v;
        }
    }
}

fn main() {}
