//! Raw launches (`launch!`) and modules cuprum did not compile (`Module::from_ptx`,
//! `from_cubin`): cuprum's own kernels launched raw on every backend, PTX written by nvcc
//! (`data/saxpy_nvcc.ptx`, from `data/saxpy.cu`) launched on every backend (on the emulator
//! through the PTX importer), and the typed errors: a cubin on the emulator, unknown kernels,
//! wrong argument counts and sizes, a stream of another context. Every output starts poisoned and is compared element by element with
//! a plain-Rust reference on fresh random inputs.

mod common;

use common::{assert_same, ctx, random_f32};
use cuprum::simt::{DisjointSlice, kernel, thread};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, Error, Module, RawArg, cuda_module, launch};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let raw = i.get();
        if let Some(out) = y.get_mut(i) {
            *out = a * x[raw] + *out;
        }
    }
}

/// The PTX nvcc wrote for `data/saxpy.cu` (`extern "C"` kernels `saxpy` and `affine`).
const NVCC_PTX: &str = include_str!("data/saxpy_nvcc.ptx");

const POISON: f32 = f32::from_bits(0x7FC0_0BAD);

/// `a x + y`: cuprum's kernel rounds the product and then the sum, as Rust does; nvcc's
/// fuses them (`fma.rn`, its default `-fmad=true`).
fn saxpy_reference(a: f32, x: &[f32], y: &[f32], fused: bool) -> Vec<f32> {
    x.iter()
        .zip(y)
        .map(|(&x, &y)| if fused { a.mul_add(x, y) } else { a * x + y })
        .collect()
}

#[test]
fn cuprum_kernels_launch_raw_on_every_backend() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = Module::from_ir(ctx, kernels::ir().expect("the module's IR")).expect("loads");
    let f = module.get_function("saxpy").expect("the kernel");
    assert_eq!(f.name(), "saxpy");
    for n in [1usize, 300, 4099] {
        let x = random_f32(n);
        let y0 = random_f32(n);
        let a = random_f32(1)[0];
        let dx = DeviceBuffer::from_host(&stream, &x).expect("x");
        let dy = DeviceBuffer::from_host(&stream, &y0).expect("y");
        let blocks = n.div_ceil(128) as u32;
        // SAFETY: saxpy reads x and writes y at its own index below their common length.
        unsafe { launch!(f<<<blocks, 128, 0, &stream>>>(a, &dx, &dy)) }.expect("launches");
        let got = dy.to_host_vec(&stream).expect("y back");
        assert_same(
            &format!("raw saxpy n={n}"),
            &got,
            &saxpy_reference(a, &x, &y0, false),
        );
    }
    // cuprum's own checks still apply: a scalar where a slice goes, a missing argument.
    let dx = DeviceBuffer::from_host(&stream, &[1.0f32; 4]).expect("x");
    // SAFETY: refused before anything runs.
    let wrong = unsafe { launch!(f<<<1, 32, 0, stream>>>(2.0f32, 7u64, &dx)) };
    assert!(
        matches!(wrong, Err(Error::ArgumentMismatch { .. })),
        "{wrong:?}"
    );
    // SAFETY: refused before anything runs.
    let short = unsafe { launch!(f<<<1, 32, 0, stream>>>(2.0f32, &dx)) };
    assert!(
        matches!(short, Err(Error::ArgumentMismatch { .. })),
        "{short:?}"
    );
    // A value by its bytes is for foreign kernels only.
    // SAFETY: refused before anything runs.
    let bytes = unsafe { launch!(f<<<1, 32, 0, stream>>>(RawArg::value(&2.0f32), &dx, &dx)) };
    assert!(
        matches!(bytes, Err(Error::ArgumentMismatch { .. })),
        "{bytes:?}"
    );
    assert!(matches!(
        module.get_function("nope"),
        Err(Error::KernelNotFound { .. })
    ));
}

#[test]
fn a_cubin_is_refused_by_the_emulator_with_a_typed_error() {
    let emu = CudaContext::emulator();
    let loaded = Module::from_cubin(&emu, &[0x7f, b'E', b'L', b'F']);
    let Err(Error::Unsupported { what }) = loaded else {
        panic!("a cubin on the emulator must be Error::Unsupported: {loaded:?}");
    };
    assert!(what.contains("GPU"), "{what}");
}

/// nvcc's PTX on the GPU (the driver compiles it) and on the emulator (imported into
/// cuprum's IR): the same launches, the same checks.
#[test]
fn ptx_from_nvcc_runs_on_every_backend() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = Module::from_ptx(ctx, NVCC_PTX).expect("nvcc's PTX loads");
    let entries = module.entries().expect("PTX entries");
    assert_eq!(entries.len(), 2);
    let saxpy = module.get_function("saxpy").expect("saxpy");
    let largest = match ctx.backend() {
        BackendKind::Cuda => (1 << 20) + 3,
        BackendKind::Emulator => (1 << 14) + 3,
    };
    for n in [1usize, 1000, largest] {
        let x = random_f32(n);
        let y0 = random_f32(n);
        let a = random_f32(1)[0];
        let dx = DeviceBuffer::from_host(&stream, &x).expect("x");
        let dy = DeviceBuffer::from_host(&stream, &y0).expect("y");
        let blocks = n.div_ceil(256) as u32;
        // SAFETY: the kernel reads x[i] and writes y[i] for i < n, both of n elements.
        unsafe { launch!(saxpy<<<(blocks, 1, 1), (256, 1), 0, stream>>>(a, &dx, &dy, n as i32)) }
            .expect("launches");
        let got = dy.to_host_vec(&stream).expect("y back");
        assert_same(
            &format!("nvcc saxpy n={n}"),
            &got,
            &saxpy_reference(a, &x, &y0, true),
        );
    }
    // A struct by value (`.param .align 8 .b8 affine_param_0[16]`).
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Affine {
        scale: f32,
        shift: f32,
        count: u64,
    }
    // SAFETY: plain data, 16 bytes without padding.
    unsafe impl cuprum::DeviceCopy for Affine {}
    let affine = module.get_function("affine").expect("affine");
    let n = 5000;
    let y0 = random_f32(n);
    let mut poisoned = y0.clone();
    poisoned.extend([POISON; 64]);
    let dy = DeviceBuffer::from_host(&stream, &poisoned).expect("y");
    let f = Affine {
        scale: -1.5,
        shift: 0.25,
        count: n as u64,
    };
    // SAFETY: the kernel writes y[i] for i < count = n, inside the buffer.
    unsafe { launch!(affine<<<n.div_ceil(128) as u32, 128, 0, stream>>>(RawArg::value(&f), &dy)) }
        .expect("launches");
    let got = dy.to_host_vec(&stream).expect("y back");
    let mut want: Vec<f32> = y0.iter().map(|y| (-1.5f32).mul_add(*y, 0.25)).collect();
    want.extend([POISON; 64]);
    assert_same("nvcc affine", &got, &want);

    // What the PTX declares is checked: count, sizes, names.
    let dx = DeviceBuffer::from_host(&stream, &[0.0f32; 4]).expect("x");
    // SAFETY: refused before anything runs.
    let few = unsafe { launch!(saxpy<<<1, 32, 0, stream>>>(1.0f32, &dx, &dx)) };
    assert!(
        matches!(few, Err(Error::ArgumentMismatch { .. })),
        "{few:?}"
    );
    // SAFETY: refused before anything runs (an f64 where the PTX has .f32).
    let wide = unsafe { launch!(saxpy<<<1, 32, 0, stream>>>(1.0f64, &dx, &dx, 4i32)) };
    assert!(
        matches!(wide, Err(Error::ArgumentMismatch { .. })),
        "{wide:?}"
    );
    assert!(matches!(
        module.get_function("saxpy2"),
        Err(Error::KernelNotFound { .. })
    ));
    // A stream of another context is refused.
    let other = CudaContext::emulator();
    // SAFETY: refused before anything runs.
    let elsewhere =
        unsafe { launch!(saxpy<<<1, 32, 0, other.default_stream()>>>(1.0f32, &dx, &dx, 4i32)) };
    assert!(
        matches!(elsewhere, Err(Error::ContextMismatch)),
        "{elsewhere:?}"
    );
    // Refused PTX is a load error with the driver's log.
    let bad = Module::from_ptx(ctx, ".version 9.0\n.target sm_80\n.entry broken( {");
    assert!(matches!(bad, Err(Error::ModuleLoad { .. })), "{bad:?}");
}
