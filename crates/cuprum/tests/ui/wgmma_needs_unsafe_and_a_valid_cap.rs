// An MMA starts asynchronous work on registers and shared memory, so it is `unsafe`; and the
// register cap `setmaxnreg` needs is a multiple of 8 from 24 to 256.
use cuprum::simt::wgmma::*;
use cuprum::simt::{kernel, max_registers};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[max_registers(100)]
    pub fn cap_not_a_multiple_of_eight() {}

    #[kernel]
    pub fn mma_outside_unsafe(d: u64) {
        let mut acc = zero_accumulator();
        wgmma_mma_m64n64k16_f32_bf16(&mut acc, d, d);
    }
}

fn main() {}
