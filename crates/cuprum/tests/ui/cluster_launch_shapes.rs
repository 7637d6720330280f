// A thread-block cluster has at most 8 blocks (sm_90's portable limit), at least one along
// each axis: `#[cluster_launch]` shapes no GPU launches are refused at `cargo build`, at the
// attribute, with what to write instead.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, cluster, cluster_launch, kernel};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[cluster_launch(4, 4, 1)]
    pub fn too_many_blocks(mut out: DisjointSlice<u32>) {
        unsafe { *out.get_unchecked_mut(0) = cluster::block_rank() };
    }

    #[kernel]
    #[cluster_launch(2, 0, 1)]
    pub fn an_empty_axis() {
        cluster::cluster_sync();
    }

    #[kernel]
    #[cluster_launch(2, 1, 1, 1)]
    pub fn four_axes() {}
}

fn main() {}
