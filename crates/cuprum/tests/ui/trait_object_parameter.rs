// Trait objects cannot cross to the device (the GPU has no vtables): each `dyn` is refused
// where it is written, in a parameter, a local, a cast or a `Box`, with what to write instead;
// traits and impls of traits other than the operators say what about them is not supported.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel, thread};

#[cuda_module]
mod kernels {
    use super::*;

    #[derive(Clone, Copy)]
    pub struct Rect {
        pub w: f32,
        pub h: f32,
    }

    pub trait Shape {
        fn area(&self) -> f32;
    }

    impl Shape for Rect {
        fn area(&self) -> f32 {
            self.w * self.h
        }
    }

    impl Rect {
        pub fn perimeter(&self) -> f32 {
            2.0 * (self.w + self.h)
        }
    }

    pub fn area_of(s: &dyn Shape) -> f32 {
        s.area()
    }

    #[kernel]
    pub fn dynamic(f: &dyn Fn(f32) -> f32, mut y: DisjointSlice<f32>) {}

    #[kernel]
    pub fn boxed_and_cast(w: f32, mut y: DisjointSlice<f32>) {
        let r = Rect { w, h: 2.0 };
        let b: Box<dyn Shape> = Box::new(r);
        let s = &r as &dyn Shape;
        if let Some(o) = y.get_mut(thread::index_1d()) {
            *o = b.area() + area_of(s) + r.perimeter();
        }
    }
}

fn main() {}
