// cuda-oxide's spellings where cuprum cannot mean the same: a member mask that leaves out
// lanes taking part (cuprum's warp operations act on the lanes executing together), a
// `static` in a kernel body that is not a `static mut` shared array, and a `requires`
// relation that is not arithmetic on the arguments. And a warp index reaches only a slice
// over the warp index space (rustc's types keep each space to its own index); a
// runtime-width 2-D slice takes only its own index, in a launch where that index is one
// thread's.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread, warp};

#[cuda_module]
mod partial_mask {
    use super::*;

    #[kernel]
    pub fn half_warp_ballot(x: &[u32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let votes = warp::ballot_sync(0x0000_FFFF, x[i.get()] > 3);
        if let Some(o) = out.get_mut(i) {
            *o = votes;
        }
    }
}

#[cuda_module]
mod plain_static {
    use super::*;

    #[kernel]
    pub fn counts(mut out: DisjointSlice<u32>) {
        static LIMIT: u32 = 7;
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = LIMIT;
        }
    }
}

#[cuda_module]
mod odd_requires {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1), requires = (x.len() >= n.pow(2)))]
    pub fn squares(n: usize, x: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get() % n];
        }
    }
}

#[cuda_module]
mod warp_index_space {
    use super::*;

    #[kernel]
    pub fn per_warp_into_a_linear_slice(mut out: DisjointSlice<f32>) {
        if let Some(w) = thread::warp_index()
            && let Some(o) = out.get_mut(w)
        {
            *o = 1.0;
        }
    }

    #[kernel]
    pub fn per_thread_into_the_warp_space(mut out: DisjointSlice<f32, thread::WarpIndex>) {
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = 1.0;
        }
    }
}

#[cuda_module]
mod runtime_width {
    use super::*;

    // Two layers of threads along z share every (row, col): the 2-D index is not one
    // thread's, so its element is not either.
    #[kernel]
    #[launch_contract(domain = 2, block = (16, 16, 2))]
    pub fn layered(mut c: DisjointSlice<f32, thread::Runtime2DIndex>) {
        if let Some(i) = thread::index_2d_runtime(&c)
            && let Some(e) = c.get_mut(i)
        {
            *e = 1.0;
        }
    }

    // Only `index_2d_runtime` makes the index of this space.
    #[kernel]
    pub fn linear_index(mut c: DisjointSlice<f32, thread::Runtime2DIndex>) {
        if let Some(e) = c.get_mut(thread::index_1d()) {
            *e = 1.0;
        }
    }
}

fn main() {}
