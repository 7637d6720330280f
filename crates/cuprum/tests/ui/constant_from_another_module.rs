// Device code reads `const` items of its module and of the module's parent in the same file;
// one imported from elsewhere by name is not found, and the message says where constants
// may live.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::cuda_module;

mod limits {
    pub const LIMIT: u32 = 7;
}

// The parent's own LIMIT is shadowed inside the module by the import, for rustc and for
// cuprum alike: the kernel must not silently read this one.
#[allow(dead_code)]
const LIMIT: u32 = 1000;

#[cuda_module]
mod kernels {
    use super::*;
    use crate::limits::LIMIT;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn clamp(x: &[u32], mut y: DisjointSlice<u32>) {
        let i = thread::index_1d();
        if let Some(o) = y.get_mut(i) {
            *o = x[i.get()].min(LIMIT);
        }
    }
}

fn main() {}
