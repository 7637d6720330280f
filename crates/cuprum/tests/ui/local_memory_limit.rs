// A GPU thread has at most 512 KiB of local memory: a kernel whose local arrays (its helpers'
// included) need more is refused at `cargo build`, at its largest array, not at launch.
use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};

#[cuda_module]
mod kernels {
    use super::*;

    pub fn lookup(k: usize) -> f64 {
        let table = [[0.25f64; 4096]; 4];
        table[k % 4][k % 4096]
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn too_much_local(x: &[f64], mut y: DisjointSlice<f64>) {
        let i = thread::index_1d();
        let mut a = [0.0f64; 16384];
        let b = [[1.0f64; 1024]; 16];
        let c = [2u64; 16384];
        let d = [3i64; 16384];
        let e = [[4.0f32; 128]; 128];
        let f = [5u64; 16384];
        let g = [6u64; 16384];
        a[i.get() % 16384] = x[0];
        if let Some(o) = y.get_mut(i) {
            *o = a[1] + b[2][3] + (c[4] + f[5] + g[6]) as f64 + d[7] as f64 + e[8][9] as f64
                + lookup(i.get());
        }
    }
}

fn main() {}
