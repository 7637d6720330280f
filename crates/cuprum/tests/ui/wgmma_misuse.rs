// What the wgmma device API refuses at build, each at the call: an accumulator picked at run
// time (it lives in registers) or in memory, an immediate that is not a constant or out of
// its range, cuda-oxide's `k16` spelling of `tf32` (whose K is 8), flags not written in the
// call, a transpose flag known only at run time, setmaxnreg in a kernel without a register
// cap, and named barrier 0 (`sync_threads`').
use cuprum::simt::wgmma::*;
use cuprum::simt::{kernel, thread};
use cuprum::cuda_module;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub unsafe fn runtime_row(d: u64, out: &mut [f32]) {
        let mut accs = [[[0.0f32; 8]; 4]; 2];
        let i = thread::threadIdx_x() as usize % 2;
        unsafe {
            wgmma_fence();
            wgmma_mma_m64n64k16_f32_bf16(&mut accs[i], d, d);
            wgmma_commit_group();
            wgmma_wait_group::<0>();
        }
        out[0] = accs[0][0][0];
    }

    #[kernel]
    pub unsafe fn accumulator_in_global_memory(d: u64, accs: &mut [[[f32; 8]; 4]]) {
        unsafe {
            wgmma_fence();
            wgmma_mma_m64n64k16_f32_bf16(&mut accs[0], d, d);
        }
    }

    #[kernel]
    pub unsafe fn wait_out_of_range() {
        wgmma_wait_group::<8>();
    }

    #[kernel]
    pub unsafe fn tf32_with_k16(d: u64, out: &mut [f32]) {
        let mut acc = zero_accumulator();
        unsafe { wgmma_mma_m64n64k16_f32_tf32(&mut acc, d, d) };
        out[0] = acc[0][0];
    }

    #[kernel]
    pub unsafe fn flags_in_a_variable(d: u64, out: &mut [f32]) {
        let mut acc = [[0.0f32; 8]; 2];
        let flags = WgmmaFlags::OVERWRITE;
        unsafe { wgmma_mma_f32_bf16(&mut acc, d, d, flags) };
        out[0] = acc[0][0];
    }

    #[kernel]
    pub unsafe fn transpose_at_run_time(d: u64, t: u32, out: &mut [f32]) {
        let mut acc = [[0.0f32; 8]; 2];
        unsafe {
            wgmma_mma_f32_bf16(
                &mut acc,
                d,
                d,
                WgmmaFlags {
                    transpose_b: t != 0,
                    ..WgmmaFlags::ACCUMULATE
                },
            )
        };
        out[0] = acc[0][0];
    }

    #[kernel]
    pub fn setmaxnreg_without_a_cap() {
        setmaxnreg_inc::<232>();
    }

    #[kernel]
    pub fn named_barrier_zero(n: u32) {
        named_barrier_sync(0, 128);
        named_barrier_arrive(1, n);
    }
}

fn main() {}
