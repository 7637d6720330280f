//! Tile tensors over memory another framework owns (`Tensor::from_foreign` with a
//! `DeviceAllocation`), on the backend `CUPRUM_DEVICE` selects: a kernel over borrowed,
//! pitched, column-major and offset memory against a plain-Rust reference (every element,
//! the pitch's padding untouched), the owner freed exactly once and only after the last
//! tensor, and every refusal as a typed error.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuprum::tile::cuda_async::device_buffer::DeviceAllocation;
use cuprum::tile::cuda_core::sys::CUdeviceptr;
use cuprum::tile::cuda_core::{free_async, malloc_async, memcpy_dtoh_async, memcpy_htod_async};
use cuprum::tile::error::{Error, TensorError};
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::{assert_same, ok};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};

/// A framework's allocation: `malloc_async` memory (or a part of it, from `offset`) that it
/// frees when its last handle goes, counting the frees.
struct Owned {
    base: CUdeviceptr,
    offset: u64,
    len_bytes: usize,
    device: usize,
    stream: Stream,
    frees: Arc<AtomicUsize>,
}

impl Owned {
    /// `bytes` of fresh memory holding `data` (as many `f32`s as fit), the allocation's
    /// first `offset` bytes left out of what the owner reports.
    fn new(stream: &Stream, data: &[f32], offset: u64, frees: &Arc<AtomicUsize>) -> Arc<Owned> {
        let bytes = std::mem::size_of_val(data) + offset as usize;
        // SAFETY: the memory is used inside its size and freed once, by `drop`.
        let base = unsafe { malloc_async(bytes, stream) };
        // SAFETY: `data` is readable; the copy stays inside the allocation.
        unsafe { memcpy_htod_async(base + offset, data.as_ptr(), data.len(), stream) };
        Arc::new(Owned {
            base,
            offset,
            len_bytes: std::mem::size_of_val(data),
            device: stream.device().ordinal(),
            stream: stream.clone(),
            frees: frees.clone(),
        })
    }

    /// The `f32`s the owner's memory holds now.
    fn read(&self, n: usize) -> Vec<f32> {
        let mut out = vec![0.0f32; n];
        // SAFETY: `n` `f32`s inside the live allocation.
        unsafe {
            memcpy_dtoh_async(out.as_mut_ptr(), self.device_ptr(), n, &self.stream);
        }
        out
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the allocation of `new`, freed only here.
        unsafe { free_async(self.base, &self.stream) };
        self.frees.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: `base + offset` starts `len_bytes` bytes of one live allocation on `device`
// until `drop`, and none of the three changes.
unsafe impl DeviceAllocation for Owned {
    fn device_ptr(&self) -> CUdeviceptr {
        self.base + self.offset
    }
    fn len_bytes(&self) -> usize {
        self.len_bytes
    }
    fn device_id(&self) -> usize {
        self.device
    }
}

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn product<const S: [i32; 2]>(
        z: &mut Tensor<f32, S>,
        x: &Tensor<f32, { [-1, -1] }>,
        y: &Tensor<f32, { [-1, -1] }>,
    ) {
        z.store(load_tile_like(x, z) * load_tile_like(y, z));
    }
}

const ROWS: usize = 37;
const COLS: usize = 45;

#[test]
fn kernels_run_over_borrowed_pitched_and_column_major_memory() {
    let device = ok(Device::new(0));
    let stream = device.default_stream();
    let mut r = rng("kernels_run_over_borrowed_pitched_and_column_major_memory");
    let frees = Arc::new(AtomicUsize::new(0));
    // x: row-major with a pitch of 48, starting 64 bytes into its allocation; y:
    // column-major; z: row-major with a pitch of 50, poisoned, padding included.
    let (x_pitch, z_pitch) = (48, 50);
    let x_data: Vec<f32> = random(&mut r, ROWS * x_pitch, -1e3, 1e3);
    let y_data: Vec<f32> = random(&mut r, ROWS * COLS, -1e3, 1e3);
    let z_data: Vec<f32> = poisoned(ROWS * z_pitch);
    let x = Owned::new(&stream, &x_data, 64, &frees);
    let y = Owned::new(&stream, &y_data, 0, &frees);
    let z = Owned::new(&stream, &z_data, 0, &frees);
    let shape = vec![ROWS as i32, COLS as i32];
    // SAFETY: only these tensors touch the memory until the launch has finished.
    let (tx, ty, mut tz) = unsafe {
        (
            Tensor::<f32>::from_foreign(x.clone(), shape.clone(), vec![x_pitch as i32, 1]),
            Tensor::<f32>::from_foreign(y.clone(), shape.clone(), vec![1, ROWS as i32]),
            Tensor::<f32>::from_foreign(z.clone(), shape.clone(), vec![z_pitch as i32, 1]),
        )
    };
    assert_eq!(tz.strides(), &[z_pitch, 1]);
    // The framework drops its handles of x and z: the tensors keep both alive.
    drop(x);
    let z_view = z.clone();
    drop(z);
    assert_eq!(frees.load(Ordering::SeqCst), 0);
    ok(kernels::product((&mut tz).partition([16, 16]), &tx, &ty).sync_on(&stream));
    let got = z_view.read(ROWS * z_pitch);
    let mut want = z_data.clone();
    for row in 0..ROWS {
        for col in 0..COLS {
            want[row * z_pitch + col] = x_data[row * x_pitch + col] * y_data[col * ROWS + row];
        }
    }
    assert_same("z, padding included", &got, &want);
    drop((tx, ty, tz));
    // x's last handle was the tensor's: freed now, once; y and z still have theirs.
    assert_eq!(frees.load(Ordering::SeqCst), 1);
    drop((y, z_view));
    assert_eq!(frees.load(Ordering::SeqCst), 3);
}

/// `try_from_foreign` with `owner`'s memory seen as `shape` with `strides`.
fn borrow<A: DeviceAllocation>(
    owner: &Arc<A>,
    shape: &[i32],
    strides: &[i32],
) -> Result<Tensor<f32>, Error> {
    // SAFETY: no launch uses the tensor.
    unsafe { Tensor::<f32>::try_from_foreign(owner.clone(), shape.to_vec(), strides.to_vec()) }
}

#[test]
fn borrowing_refuses_what_does_not_fit_the_allocation() {
    let device = ok(Device::new(0));
    let stream = device.default_stream();
    let frees = Arc::new(AtomicUsize::new(0));
    let owner = Owned::new(&stream, &[1.0f32; 64], 0, &frees);
    ok(borrow(&owner, &[8, 8], &[8, 1]));
    ok(borrow(&owner, &[0, 100], &[100, 1]));
    let foreign_layout = |e: Result<Tensor<f32>, Error>, what: &str| match e {
        Err(Error::Tensor(TensorError::Foreign { .. })) => {}
        other => panic!("{what}: expected a foreign-layout refusal, got {other:?}"),
    };
    // Past the allocation's length (by the strides' extent, not the element count), two
    // indices for one element, mismatched ranks, negative sizes.
    foreign_layout(borrow(&owner, &[8, 9], &[9, 1]), "65 elements");
    foreign_layout(borrow(&owner, &[8, 8], &[9, 1]), "a pitch past the end");
    foreign_layout(borrow(&owner, &[8, 8], &[4, 1]), "overlapping rows");
    foreign_layout(borrow(&owner, &[8, 8], &[0, 1]), "a broadcast");
    foreign_layout(borrow(&owner, &[8, 8], &[8]), "ranks");
    foreign_layout(borrow(&owner, &[-8, 8], &[8, 1]), "a negative size");
    let interop = |e: Result<Tensor<f32>, Error>, what: &str| match e {
        Err(Error::Runtime(cuprum::Error::Interop { .. })) => {}
        other => panic!("{what}: expected an interop refusal, got {other:?}"),
    };
    // Memory the runtime cannot borrow: misaligned for f32, running past the end of the
    // allocation it starts in (an owner that claims too much), in no allocation at all, on a
    // device that does not exist.
    let base = owner.device_ptr();
    interop(
        borrow(&Claimed::at(base + 2, 64, owner.device), &[4, 4], &[4, 1]),
        "misaligned",
    );
    // 128 bytes from byte 192 of the 256 the allocation has; 64 bytes from there fit.
    interop(
        borrow(
            &Claimed::at(base + 192, 1024, owner.device),
            &[4, 8],
            &[8, 1],
        ),
        "past the allocation",
    );
    ok(borrow(
        &Claimed::at(base + 192, 1024, owner.device),
        &[4, 4],
        &[4, 1],
    ));
    assert!(
        borrow(&Claimed::at(0x100, 64, owner.device), &[4], &[1]).is_err(),
        "an address in no allocation"
    );
    assert!(
        borrow(&Claimed::at(base, 64, 4096), &[4], &[1]).is_err(),
        "device 4096"
    );
    drop(owner);
    assert_eq!(frees.load(Ordering::SeqCst), 1);
}

/// An owner that claims memory it does not hold (what a wrong `DeviceAllocation` says).
struct Claimed {
    address: CUdeviceptr,
    len_bytes: usize,
    device: usize,
}

impl Claimed {
    fn at(address: CUdeviceptr, len_bytes: usize, device: usize) -> Arc<Claimed> {
        Arc::new(Claimed {
            address,
            len_bytes,
            device,
        })
    }
}

// SAFETY: not upheld on purpose; the tests check that the runtime refuses these claims
// before anything reads or writes the memory.
unsafe impl DeviceAllocation for Claimed {
    fn device_ptr(&self) -> CUdeviceptr {
        self.address
    }
    fn len_bytes(&self) -> usize {
        self.len_bytes
    }
    fn device_id(&self) -> usize {
        self.device
    }
}

#[test]
#[should_panic(expected = "Tensor::from_foreign: cannot make a tensor of shape [8, 9]")]
fn from_foreign_panics_with_the_refusal() {
    let device = ok(Device::new(0));
    let stream = device.default_stream();
    let owner = Owned::new(&stream, &[1.0f32; 64], 0, &Arc::new(AtomicUsize::new(0)));
    // SAFETY: no launch uses the tensor.
    let _ = unsafe { Tensor::<f32>::from_foreign(owner, vec![8, 9], vec![9, 1]) };
}
