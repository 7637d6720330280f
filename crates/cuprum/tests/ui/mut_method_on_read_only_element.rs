// A `&mut self` method cannot run on an element of a read-only slice: rustc refuses the
// borrow, and cuprum's compiler says why too.
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{DeviceCopy, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Counter {
        pub n: u32,
    }

    impl Counter {
        pub fn bump(&mut self) {
            self.n += 1;
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn bump_inputs(counters: &[Counter], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        counters[i.get()].bump();
        if let Some(o) = out.get_mut(i) {
            *o = counters[i.get()].n;
        }
    }
}

fn main() {}
