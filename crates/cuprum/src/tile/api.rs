//! Making tensors: lazy constructors ([`zeros`], [`ones`], [`full`], [`arange`],
//! [`linspace`], [`eye`], [`eye_rect`], [`from_host`], [`copy_host_vec_to_device`],
//! [`dup`]), seeded random tensors ([`rand`],
//! [`randn`]), the copy back to the host, and `reshape` on operations, under cuTile Rust's
//! names (`cutile::api`).
//!
//! Every constructor returns a [`DeviceOp`]: nothing is allocated or copied until the
//! operation runs (`.sync_on(&stream)`), on the stream it runs on. Host data given to a
//! constructor is copied into the operation when it is made, so the caller's buffer need not
//! outlive it. Filled tensors (`ones`, `full`, `arange`, `linspace`, `eye`) are filled on
//! the host and copied;
//! random ones are generated on the device by a tile kernel (Philox4x32-10; the module
//! `random` says how each sample is made).

use std::sync::Arc;

use cuprum_ir::{Constant, scalar::cast_constant};

use crate::tile::cuda_core::DType;
use crate::tile::error::Error;
use crate::tile::op::{Deferred, DeviceOp, ExecutionContext, awaitable, from_context};
use crate::tile::tensor::{Reshape, Tensor, ToHostVec};

pub use crate::tile::random::{RandNormal, RandUniform};

/// A tensor of `shape` with every element zero.
pub fn zeros<T: DType>(shape: &[usize]) -> impl DeviceOp<Output = Tensor<T>> + use<T> {
    let shape = shape.to_vec();
    from_context(move |ctx| Tensor::zeroed(ctx.stream(), shape))
}

/// A tensor of `shape` with every element one.
pub fn ones<T: DType>(shape: &[usize]) -> impl DeviceOp<Output = Tensor<T>> + use<T> {
    full(T::one(), shape)
}

/// A tensor of `shape` with every element `value`.
pub fn full<T: DType>(value: T, shape: &[usize]) -> impl DeviceOp<Output = Tensor<T>> + use<T> {
    let shape = shape.to_vec();
    from_context(move |ctx| {
        let n = Tensor::<T>::checked_count(&shape)?;
        Tensor::from_slice(ctx.stream(), &vec![value; n], shape)
    })
}

/// The rank-1 tensor `[0, 1, .., len - 1]`, each index converted to `T` with Rust's `as`.
pub fn arange<T: DType>(len: usize) -> impl DeviceOp<Output = Tensor<T>> + use<T> {
    from_context(move |ctx| {
        Tensor::<T>::checked_count(&[len])?;
        let data: Vec<T> = (0..len as u64)
            .map(|i| T::from_bits(cast_constant(Constant::u64(i), T::DTYPE).bits))
            .collect();
        Tensor::from_slice(ctx.stream(), &data, vec![len])
    })
}

/// The rank-1 tensor of `n` values evenly spaced from `start` to `stop`, both included
/// (`start + i * (stop - start) / (n - 1)` in `f32`; `[start]` when `n` is 1, the last
/// value exactly `stop`).
pub fn linspace(start: f32, stop: f32, n: usize) -> impl DeviceOp<Output = Tensor<f32>> {
    from_context(move |ctx| {
        Tensor::<f32>::checked_count(&[n])?;
        let step = if n > 1 {
            (stop - start) / (n - 1) as f32
        } else {
            0.0
        };
        let data: Vec<f32> = (0..n)
            .map(|i| {
                if n > 1 && i == n - 1 {
                    stop
                } else {
                    start + i as f32 * step
                }
            })
            .collect();
        Tensor::from_slice(ctx.stream(), &data, vec![n])
    })
}

/// The `n` x `n` identity matrix (`f32`).
pub fn eye(n: usize) -> impl DeviceOp<Output = Tensor<f32>> {
    eye_rect(n, n)
}

/// The `rows` x `cols` matrix (`f32`) with ones where the row index equals the column
/// index and zeros elsewhere.
pub fn eye_rect(rows: usize, cols: usize) -> impl DeviceOp<Output = Tensor<f32>> {
    from_context(move |ctx| {
        let n = Tensor::<f32>::checked_count(&[rows, cols])?;
        let data: Vec<f32> = (0..n)
            .map(|i| {
                if i / cols.max(1) == i % cols.max(1) {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        Tensor::from_slice(ctx.stream(), &data, vec![rows, cols])
    })
}

/// A tensor of `shape` holding `data` in row-major order (whose length must be the shape's
/// element count). The data is copied now; the device copy is made when the operation runs.
pub fn from_host<T: DType>(
    data: &[T],
    shape: &[usize],
) -> impl DeviceOp<Output = Tensor<T>> + use<T> {
    FromHost {
        data: Arc::new(data.to_vec()),
        shape: shape.to_vec(),
    }
}

/// The rank-1 tensor holding `data`.
pub fn copy_host_vec_to_device<T: DType>(
    data: &Arc<Vec<T>>,
) -> impl DeviceOp<Output = Tensor<T>> + use<T> {
    FromHost {
        data: data.clone(),
        shape: vec![data.len()],
    }
}

/// The operation of [`from_host`] and [`copy_host_vec_to_device`]: executed, it returns once
/// the copy has ended; awaited, its first poll only starts the copy, from page-locked memory
/// the future keeps until then (see [`op`](crate::tile::op)'s docs on `.await`).
struct FromHost<T> {
    data: Arc<Vec<T>>,
    shape: Vec<usize>,
}

impl<T: DType> DeviceOp for FromHost<T> {
    type Output = Tensor<T>;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<Tensor<T>, Error> {
        Tensor::from_slice(ctx.stream(), &self.data, self.shape)
    }
    unsafe fn execute_deferred<'s>(
        self,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'s, Tensor<T>>, Error>
    where
        Self: 's,
    {
        Tensor::from_slice_deferred(ctx.stream(), &self.data, self.shape)
    }
}
awaitable!([T: DType] FromHost<T> => Tensor<T>);

/// A tensor of `shape` with samples uniform in `[0, 1)`, generated on the device from
/// `seed` (the same seed gives the same tensor; `None` takes a fresh seed each call).
/// `f32` samples have 24 random bits, `f64` samples 53.
pub fn rand<T: RandUniform, const RANK: usize>(
    shape: [usize; RANK],
    seed: Option<u64>,
) -> impl DeviceOp<Output = Tensor<T>> + use<T, RANK> {
    crate::tile::random::rand(shape, seed)
}

/// A tensor of `shape` with samples of the normal distribution of `mean` and standard
/// deviation `std`, generated on the device from `seed` (Box–Muller over Philox4x32-10; the
/// same seed gives the same tensor on one backend; `None` takes a fresh seed each call).
/// `f32`, `f64`, `f16` and `bf16`.
pub fn randn<T: RandNormal, const RANK: usize>(
    mean: T,
    std: T,
    shape: [usize; RANK],
    seed: Option<u64>,
) -> impl DeviceOp<Output = Tensor<T>> + use<T, RANK> {
    crate::tile::random::randn(mean, std, shape, seed)
}

/// [`randn`] for `f16` (cuTile Rust's name).
pub fn randn_f16<const RANK: usize>(
    mean: half::f16,
    std: half::f16,
    shape: [usize; RANK],
    seed: Option<u64>,
) -> impl DeviceOp<Output = Tensor<half::f16>> + use<RANK> {
    randn(mean, std, shape, seed)
}

/// The elements of `tensor`, in row-major order, copied to the host.
pub fn copy_device_to_host_vec<T: DType>(
    tensor: &Arc<Tensor<T>>,
) -> impl DeviceOp<Output = Vec<T>> + use<T> {
    tensor.clone().to_host_vec()
}

/// Copies `src` into `dst` on the device (same shape, each the whole of its allocation):
/// how new inputs reach a graph's buffers (`CudaGraph::update`), and a node a graph records.
pub fn memcpy<'a, T: DType>(
    dst: &'a mut Tensor<T>,
    src: &'a Tensor<T>,
) -> impl DeviceOp<Output = ()> + use<'a, T> {
    from_context(move |ctx| dst.copy_from_tensor(src, ctx.stream()))
}

/// A new tensor with a copy of `tensor`'s elements (contiguous).
pub fn dup<T: DType>(tensor: &Tensor<T>) -> impl DeviceOp<Output = Tensor<T>> + use<T> {
    tensor.dup()
}

/// `reshape` on operations that produce a tensor (see [`Reshape`]); a shape of another
/// element count fails when the operation runs.
pub trait DeviceOpReshape<T: DType>: DeviceOp<Output = Tensor<T>> {
    /// See the trait docs.
    fn reshape(self, shape: &[usize]) -> ReshapeOp<Self> {
        ReshapeOp {
            op: self,
            shape: shape.to_vec(),
        }
    }
}

impl<T: DType, D: DeviceOp<Output = Tensor<T>>> DeviceOpReshape<T> for D {}

/// See [`DeviceOpReshape`].
pub struct ReshapeOp<D> {
    op: D,
    shape: Vec<usize>,
}

impl<T: DType, D: DeviceOp<Output = Tensor<T>>> DeviceOp for ReshapeOp<D> {
    type Output = Tensor<T>;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<Tensor<T>, Error> {
        // SAFETY: the caller's contract.
        unsafe { self.op.execute(ctx) }?.reshape(&self.shape)
    }
}
crate::tile::op::awaitable!([T: DType, D: DeviceOp<Output = Tensor<T>>] ReshapeOp<D> => Tensor<T>);

/// `reshape` on operations that produce an `Arc` of a tensor: another `Arc` viewing the same
/// allocation.
pub trait DeviceOpReshapeShared<T: DType>: DeviceOp<Output = Arc<Tensor<T>>> {
    /// See the trait docs.
    fn reshape(self, shape: &[usize]) -> ReshapeSharedOp<Self> {
        ReshapeSharedOp {
            op: self,
            shape: shape.to_vec(),
        }
    }
}

impl<T: DType, D: DeviceOp<Output = Arc<Tensor<T>>>> DeviceOpReshapeShared<T> for D {}

/// See [`DeviceOpReshapeShared`].
pub struct ReshapeSharedOp<D> {
    op: D,
    shape: Vec<usize>,
}

impl<T: DType, D: DeviceOp<Output = Arc<Tensor<T>>>> DeviceOp for ReshapeSharedOp<D> {
    type Output = Arc<Tensor<T>>;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<Arc<Tensor<T>>, Error> {
        // SAFETY: the caller's contract.
        (&unsafe { self.op.execute(ctx) }?).reshape(&self.shape)
    }
}
crate::tile::op::awaitable!([T: DType, D: DeviceOp<Output = Arc<Tensor<T>>>] ReshapeSharedOp<D> => Arc<Tensor<T>>);
