// The arguments of a generic struct come from the path (`Acc::<f32>::new()`), the receiver,
// the arguments, the binding's annotation or the arguments of its later method calls
// (`acc.add(x)`); one that only another use would tell (here a field assignment) is not
// inferred yet, and the message says how to name it.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, Num, kernel, thread};

#[cuda_module]
mod kernels {
    use super::*;

    #[derive(Clone, Copy)]
    pub struct Acc<T> {
        pub sum: T,
        pub count: u32,
    }

    impl<T: Num> Acc<T> {
        pub fn new() -> Self {
            Self { sum: T::ZERO, count: 0 }
        }
        pub fn add(&mut self, x: T) {
            self.sum += x;
            self.count += 1;
        }
    }

    #[kernel]
    pub fn sums(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = y.get_mut(i) {
            let mut acc = Acc::new();
            acc.sum = x[i.get()];
            *o = acc.sum;
        }
    }
}

fn main() {}
