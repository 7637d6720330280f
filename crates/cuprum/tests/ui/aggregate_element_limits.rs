// Near the supported aggregate elements (slices and shared arrays of arrays and structs,
// flat local arrays of structs): tuples in slices, dynamic shared memory of structs, shared
// indexing outside `unsafe` and local arrays of arrays of structs are refused at
// `cargo build`, saying what to write instead.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, SharedArray, dynamic_shared, kernel, thread};

#[cuda_module]
mod kernels {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, cuprum::DeviceCopy)]
    pub struct V2 {
        pub x: f32,
        pub y: f32,
    }

    #[kernel]
    pub unsafe fn tuples(x: &[(f32, u32)], y: &mut [f32]) {
        y[0] = x[0].0;
    }

}

#[cuda_module]
mod dynamic {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, cuprum::DeviceCopy)]
    pub struct V2 {
        pub x: f32,
        pub y: f32,
    }

    #[kernel]
    pub unsafe fn dynamic_structs(y: &mut [f32]) {
        let d = dynamic_shared::<V2>();
        y[0] = unsafe { d.get(0).x };
    }
}

#[cuda_module]
mod indexing {
    use super::*;

    #[kernel]
    pub fn safe_index(mut y: DisjointSlice<f32>) {
        let mut tile = SharedArray::<[f32; 17], 16>::uninit();
        tile[0][1] = 1.0;
        if let Some(o) = y.get_mut(thread::index_1d()) {
            *o = 0.0;
        }
    }
}

#[cuda_module]
mod nested_locals {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, cuprum::DeviceCopy)]
    pub struct V2 {
        pub x: f32,
        pub y: f32,
    }

    #[kernel]
    pub unsafe fn grid_of_structs(y: &mut [f32]) {
        let g = [[V2 { x: 1.0, y: 2.0 }; 2]; 3];
        y[0] = g[1][0].x;
    }
}

fn main() {}
