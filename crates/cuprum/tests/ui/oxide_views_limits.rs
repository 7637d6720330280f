// cuda-oxide's proof-carrying handles where an element could be two threads': a 32-bit
// index without the launch contract that makes it unique, or in a launch where two threads
// share it; a tiled slice reached through a second pattern; a tile position outside the
// tile. And a witness chosen at run time still needs one layer of threads along z.
use cuprum::cuda_module;
use cuprum::simt::{
    DisjointSlice, LinearTiles, RowMajorTiles, RuntimeRowMajorTiles, kernel, launch_contract,
    thread,
};

#[cuda_module]
mod no_contract {
    use super::*;

    // Without a contract nothing bounds the launch: refuse, and say which contract to write.
    #[kernel(launch_context = lc)]
    pub fn uncontracted(mut out: DisjointSlice<u32>) {
        let i = thread::index_1d_u32(lc);
        if let Some(mut e) = out.element_thread32(i) {
            e.write(1);
        }
    }

    // A 2-D coordinate needs a 2-D domain.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 1, coordinates = u32, block = (64, 1, 1))]
    pub fn coord_in_1d(mut out: DisjointSlice<f32, RowMajorTiles<1, 2, 64>>) {
        if let Some(mut t) = out.tile_2d32(thread::coord_2d_u32(lc)) {
            t.at_const::<0, 0>().write(1.0);
        }
    }
}

#[cuda_module]
mod shared_indices {
    use super::*;

    // Threads (x, 0) and (x, 1) of a block have one 1-D index: one tile.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 1, coordinates = u32, block = (32, 2, 1))]
    pub fn two_rows(mut v: DisjointSlice<u32, LinearTiles<4>>) {
        if let Some(mut t) = v.tile_thread32(thread::index_1d_u32(lc)) {
            t.at_const::<0>().write(1);
        }
    }

    // Two layers along z share every 2-D coordinate.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 2, coordinates = u32, block = (8, 8, 2))]
    pub fn layered(mut c: DisjointSlice<f32, RuntimeRowMajorTiles<1, 1>>) {
        if let Some(mut t) = c.tile_2d32_rt(thread::coord_2d_u32(lc)) {
            t.at_const::<0, 0>().write(1.0);
        }
    }

    // Choosing between witnesses does not make a layered launch's index one thread's.
    #[kernel]
    #[launch_contract(domain = 2, block = (16, 16, 2))]
    pub fn chosen_witness(
        a: DisjointSlice<f32, thread::Runtime2DIndex>,
        mut b: DisjointSlice<f32, thread::Runtime2DIndex>,
        flip: bool,
    ) {
        let pair = (thread::index_2d_runtime(&a), thread::index_2d_runtime(&b));
        if let (Some(wa), Some(wb)) = pair {
            let w = if flip { wa } else { wb };
            if let Some(e) = b.get_mut(w) {
                *e = 1.0;
            }
        }
    }
}

#[cuda_module]
mod mixed_patterns {
    use super::*;

    // `element_thread32(i)` gives thread 1 element 1; `chunk_mut::<4>` gives it to thread 0.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 1, coordinates = u32, block = (64, 1, 1))]
    pub fn element_and_chunk(mut out: DisjointSlice<u32>) {
        if let Some(mut e) = out.element_thread32(thread::index_1d_u32(lc)) {
            e.write(1);
        }
        for (_, o) in out.chunk_mut::<4>(thread::index_1d()) {
            *o = 2;
        }
    }

    // A tile's positions are checked against its shape.
    #[kernel(launch_context = lc)]
    #[launch_contract(domain = 1, coordinates = u32, block = (64, 1, 1))]
    pub fn past_the_tile(mut v: DisjointSlice<u32, LinearTiles<4>>) {
        if let Some(mut t) = v.tile_thread32(thread::index_1d_u32(lc)) {
            t.at_const::<4>().write(1);
        }
    }
}

fn main() {}
