// What ported CUDA code may still write that device code does not support yet, near what it
// does (const generics, generic numbers, early returns, nested structs, swapping whole
// arrays): each is refused at `cargo build` with what to write instead.
use cuprum::cuda_module;
use cuprum::simt::kernel;

#[cuda_module]
mod kernels {
    use super::*;

    #[derive(Clone, Copy)]
    pub struct V3 {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    pub fn ones<const N: usize>() -> [f32; N] {
        [1.0; N]
    }

    #[kernel]
    pub unsafe fn const_from_annotation(out: &mut [f32]) {
        let a: [f32; 4] = ones();
        out[0] = a[0];
    }

    #[kernel]
    pub unsafe fn labelled(out: &mut [u32]) {
        'rows: for i in 0..4u32 {
            for j in 0..4u32 {
                if i * j == 4 {
                    break 'rows;
                }
            }
        }
        out[0] = 1;
    }
}

// Kernel signatures are checked before any body is compiled.
#[cuda_module]
mod signatures {
    use super::*;

    #[derive(Clone, Copy)]
    pub struct V3 {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    #[derive(Clone, Copy)]
    pub struct Segment {
        pub ends: [f32; 2],
    }

    #[kernel]
    pub unsafe fn array_field(s: Segment, out: &mut [f32]) {
        out[0] = 1.0;
    }
}

#[cuda_module]
mod swaps {
    use super::*;

    #[kernel]
    pub unsafe fn swap_arrays(out: &mut [f32]) {
        let mut a = [1.0f32; 4];
        let mut b = [2.0f32; 4];
        core::mem::swap(&mut a, &mut b);
        out[0] = a[0] + b[0];
    }
}

fn main() {}
