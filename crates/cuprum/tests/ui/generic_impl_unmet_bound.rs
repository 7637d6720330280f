// A generic `impl` of a device struct may only have bounds that every number meets (the
// front end specializes its parameters to numbers): a trait of the user's own (or another
// crate's) is one it cannot check, and the message says to bound by `Num` instead.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, Num, kernel, thread};

pub trait Float: Copy {
    fn sqrt(self) -> Self;
}

#[cuda_module]
mod kernels {
    use super::*;

    #[derive(Clone, Copy)]
    pub struct Vec3<T> {
        pub x: T,
        pub y: T,
        pub z: T,
    }

    impl<T: Num + Float> Vec3<T> {
        pub fn length(self) -> T {
            (self.x * self.x + self.y * self.y + self.z * self.z).sqrt()
        }
    }

    #[kernel]
    pub fn lengths(x: f32, mut y: DisjointSlice<f32>) {
        if let Some(o) = y.get_mut(thread::index_1d()) {
            *o = x;
        }
    }
}

fn main() {}
