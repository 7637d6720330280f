// cuda-oxide's constant memory where it cannot mean what is written: a helper reading a
// constant (kernels read it and pass the value), a constant named other than through
// `get()`/`get_ref()`, a `mut` one, one of another type, and one with an initializer (it
// starts zeroed; the host sets it).
use cuprum::cuda_module;
use cuprum::simt::{ConstantMemory, DisjointSlice, constant, kernel, thread};

#[cuda_module]
mod read_in_helper {
    use super::*;

    #[constant]
    static SCALE: ConstantMemory<f32> = ConstantMemory::UNINIT;

    fn scaled(x: f32) -> f32 {
        x * SCALE.get()
    }

    #[kernel]
    pub fn apply(mut out: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        if let Some(o) = out.get_mut(idx) {
            *o = scaled(1.0);
        }
    }
}

#[cuda_module]
mod named_whole {
    use super::*;

    #[constant]
    static SCALE: ConstantMemory<f32> = ConstantMemory::UNINIT;

    #[kernel]
    pub fn apply(mut out: DisjointSlice<f32>) {
        let c = &SCALE;
        let idx = thread::index_1d();
        if let Some(o) = out.get_mut(idx) {
            *o = c.get();
        }
    }
}

#[cuda_module]
mod bad_declarations {
    use super::*;

    #[constant]
    static mut WRITABLE: ConstantMemory<f32> = ConstantMemory::UNINIT;

    #[constant]
    static PLAIN: f32 = 1.0;

    #[constant]
    static SET_HERE: ConstantMemory<f32> = ConstantMemory { value: 2.0 };

    #[kernel]
    pub fn apply(mut out: DisjointSlice<f32>) {
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = 1.0;
        }
    }
}

fn main() {}
