// Strings, the standard library and recursion have no device counterpart:
// each is a compile error that says so.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel, thread};

#[cuda_module]
mod kernels {
    use super::*;

    pub fn forever(n: u32) -> u32 {
        if n == 0 { 0 } else { forever(n - 1) + 1 }
    }

    #[kernel]
    pub fn strings(mut y: DisjointSlice<f32>) {
        let s = "text";
    }

    #[kernel]
    pub fn std_call(mut y: DisjointSlice<f32>) {
        std::process::abort();
    }

    #[kernel]
    pub fn recursion(mut y: DisjointSlice<u32>) {
        if let Some(o) = y.get_mut(thread::index_1d()) {
            *o = forever(3);
        }
    }
}

fn main() {}
