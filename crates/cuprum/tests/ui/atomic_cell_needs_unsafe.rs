// A typed atomic cell is made from a raw pointer into a slice, as cuda-oxide makes it: the
// dereference is `unsafe`, in device code as in Rust, so a safe kernel cannot write through
// a `&[T]` it was given to read without saying so.
use cuprum::cuda_module;
use cuprum::simt::atomic::{AtomicOrdering, DeviceAtomicU32};
use cuprum::simt::{DisjointSlice, kernel, thread};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn count(counter: &[u32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let c = &*(counter.as_ptr() as *const DeviceAtomicU32);
        let old = c.fetch_add(1, AtomicOrdering::Relaxed);
        if let Some(o) = out.get_mut(i) {
            *o = old;
        }
    }
}

fn main() {}
