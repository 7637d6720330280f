//! Tensors on the device ([`Tensor`]), their partitions into tiles ([`Partition`]), and the
//! traits that give tensors, `Arc`s of tensors and operations producing them their methods
//! (`partition`, `reshape`, `to_host_vec`, `unpartition`), under cuTile Rust's names.
//!
//! A tensor is a view of a device allocation: a shape, strides (in elements) and the offset
//! of its first element. The allocation is shared by views (an `Arc`), so `reshape` of a
//! shared tensor copies nothing. A [`Partition`] is a tensor cut into tiles of one shape: the
//! form a kernel's `&mut Tensor` output takes, since the partition fixes which tile block
//! owns which tile and how many blocks the launch has ([`partition_grid`]).

use std::fmt;
use std::sync::Arc;

use crate::tile::cuda_core::{DType, DTypeId, Stream};
use crate::tile::error::{Error, TensorError};
use crate::tile::op::{
    Deferred, DeviceOp, ExecutionContext, IntoDeviceOp, Value, awaitable, from_context, value,
};
use crate::{CudaContext, DeviceBuffer};

pub use crate::tile::launch::{KernelInput, KernelOutput};
pub use crate::tile::mapped::MappedPartition;
pub use crate::tile::pointer::DevicePointer;

/// A tensor in device memory: a shape, strides and an offset over a shared allocation.
pub struct Tensor<T: DType> {
    storage: Arc<DeviceBuffer<T>>,
    offset: usize,
    shape: Vec<usize>,
    strides: Vec<usize>,
}

impl<T: DType> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("elem", &T::DTYPE)
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .field("offset", &self.offset)
            .finish()
    }
}

/// The row-major strides of `shape`.
pub(crate) fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(shape[i + 1]);
    }
    strides
}

/// The element count of `shape` (1 for rank 0), if it fits `usize`.
pub(crate) fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// The tile blocks a tensor of `shape` cut into tiles of `tile` needs along each axis
/// (`ceil(shape / tile)`), the one definition of a partition's grid that partitions and
/// launches share; `None` when the ranks differ or a tile size is zero.
pub fn partition_grid(shape: &[usize], tile: &[usize]) -> Option<Vec<u64>> {
    if shape.len() != tile.len() || tile.contains(&0) {
        return None;
    }
    Some(
        shape
            .iter()
            .zip(tile)
            .map(|(&n, &t)| n.div_ceil(t) as u64)
            .collect(),
    )
}

impl<T: DType> Tensor<T> {
    /// A contiguous tensor of `shape` over all of `buffer`, whose length must be the shape's
    /// element count.
    pub(crate) fn from_buffer(buffer: DeviceBuffer<T>, shape: Vec<usize>) -> Result<Self, Error> {
        if element_count(&shape) != Some(buffer.len()) {
            return Err(TensorError::HostLength {
                len: buffer.len(),
                shape,
            }
            .into());
        }
        Ok(Self {
            strides: contiguous_strides(&shape),
            storage: Arc::new(buffer),
            offset: 0,
            shape,
        })
    }

    /// A tensor of `shape` with `strides` over `buffer` from its first element; the caller
    /// has checked that every index lies inside the buffer and names its own element
    /// (`foreign`).
    pub(crate) fn from_strided_buffer(
        buffer: DeviceBuffer<T>,
        shape: Vec<usize>,
        strides: Vec<usize>,
    ) -> Self {
        Self {
            storage: Arc::new(buffer),
            offset: 0,
            shape,
            strides,
        }
    }

    /// A contiguous tensor of `shape` over all of `buffer`, without a copy (a SIMT kernel's
    /// output, a collective's result); `buffer`'s length must be the shape's element count.
    pub fn from_device_buffer(buffer: DeviceBuffer<T>, shape: &[usize]) -> Result<Self, Error> {
        Self::from_buffer(buffer, shape.to_vec())
    }

    /// The tensor's memory as a [`DeviceBuffer`], without a copy, when the tensor is
    /// contiguous over all of it and no other tensor shares it; otherwise the tensor as it
    /// was (`dup()` it first, which copies it into memory of its own).
    pub fn try_into_device_buffer(self) -> Result<DeviceBuffer<T>, Self> {
        let whole = self.offset == 0
            && self.strides == contiguous_strides(&self.shape)
            && element_count(&self.shape) == Some(self.storage.len());
        if !whole {
            return Err(self);
        }
        let Tensor {
            storage,
            offset,
            shape,
            strides,
        } = self;
        Arc::try_unwrap(storage).map_err(|storage| Tensor {
            storage,
            offset,
            shape,
            strides,
        })
    }

    /// The element count of `shape`, or the error for a shape too large for memory.
    pub(crate) fn checked_count(shape: &[usize]) -> Result<usize, Error> {
        element_count(shape)
            .filter(|n| n.checked_mul(size_of::<T>()).is_some())
            .ok_or_else(|| {
                TensorError::TooLarge {
                    shape: shape.to_vec(),
                    elem: T::DTYPE,
                }
                .into()
            })
    }

    /// A new contiguous tensor of `shape` with every element zero.
    pub(crate) fn zeroed(stream: &Stream, shape: Vec<usize>) -> Result<Self, Error> {
        let n = Self::checked_count(&shape)?;
        Self::from_buffer(DeviceBuffer::zeroed(stream, n)?, shape)
    }

    /// A new contiguous tensor of `shape` holding `data` in row-major order.
    pub(crate) fn from_slice(
        stream: &Stream,
        data: &[T],
        shape: Vec<usize>,
    ) -> Result<Self, Error> {
        if element_count(&shape) != Some(data.len()) {
            return Err(TensorError::HostLength {
                len: data.len(),
                shape,
            }
            .into());
        }
        Self::from_buffer(DeviceBuffer::from_host(stream, data)?, shape)
    }

    /// [`from_slice`](Self::from_slice) whose copy may still run when it returns (see
    /// `cuprum_runtime::staged`): the tensor can be used on `stream` at once, and the
    /// `Deferred` keeps the copy's host memory until the stream's work has completed.
    pub(crate) fn from_slice_deferred(
        stream: &Stream,
        data: &[T],
        shape: Vec<usize>,
    ) -> Result<Deferred<'static, Self>, Error> {
        if element_count(&shape) != Some(data.len()) {
            return Err(TensorError::HostLength {
                len: data.len(),
                shape,
            }
            .into());
        }
        let (buffer, copying) = DeviceBuffer::from_host_pending(stream, data)?;
        Ok(Deferred::Kept(
            Self::from_buffer(buffer, shape)?,
            Box::new(copying),
        ))
    }

    /// The size along each axis.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The distance in elements between neighbours along each axis.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// The position of the first element in the allocation, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The number of axes.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements.
    pub fn size(&self) -> usize {
        // Cannot overflow: the view lies inside its allocation.
        self.shape.iter().product()
    }

    /// The number of bytes of the elements.
    pub fn num_bytes(&self) -> usize {
        self.size() * size_of::<T>()
    }

    /// Whether the elements lie in row-major order without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.strides == contiguous_strides(&self.shape)
    }

    /// The element type.
    pub fn dtype(&self) -> DTypeId {
        T::DTYPE
    }

    /// The device address of the first element, for an `unsafe` entry's `*mut T` parameter
    /// (see [`DevicePointer`]; the kernel reaches the allocation from there to its end).
    pub fn device_pointer(&self) -> DevicePointer<T> {
        let address = self
            .buffer()
            .device_address()
            .wrapping_add((self.offset * size_of::<T>()) as u64);
        // SAFETY: an address inside this tensor's live allocation (and a launch checks it).
        unsafe { DevicePointer::from_cu_deviceptr(address) }
    }

    /// The context (device) whose memory holds the tensor.
    pub fn context(&self) -> &CudaContext {
        self.storage.context()
    }

    /// The ordinal of the device whose memory holds the tensor.
    pub fn device_id(&self) -> usize {
        self.storage.context().ordinal()
    }

    /// The allocation behind the view.
    pub(crate) fn buffer(&self) -> &DeviceBuffer<T> {
        &self.storage
    }

    /// A handle that keeps the allocation alive.
    pub(crate) fn storage(&self) -> Arc<dyn Send + Sync> {
        self.storage.clone()
    }

    /// A new tensor with a copy of the elements (contiguous), made when the operation runs.
    pub fn dup(&self) -> impl DeviceOp<Output = Tensor<T>> + use<T> {
        let source = self.share();
        from_context(move |ctx| source.copy_on(ctx.stream()))
    }

    /// An `Arc` of another tensor over this one's allocation (cuTile Rust's
    /// `into_shared_alias`), for operation graphs that take their inputs as `Arc`s while the
    /// program keeps writing the tensor (new inputs of a recorded graph). The runtime orders
    /// every use of the allocation, through either, like any other.
    ///
    /// # Safety
    /// Never pass both (or this tensor while the alias is read) to one launch where one of
    /// them is written: a kernel may read its inputs through a cache that does not see its
    /// own writes. Write the tensor only while no launch reads the alias.
    pub unsafe fn into_shared_alias(&self) -> Arc<Tensor<T>> {
        Arc::new(self.share())
    }

    /// Another view of the same elements (the allocation is shared).
    fn share(&self) -> Tensor<T> {
        Tensor {
            storage: self.storage.clone(),
            offset: self.offset,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
        }
    }

    /// Whether the view covers its whole allocation in row-major order.
    fn is_whole_allocation(&self) -> bool {
        self.offset == 0 && self.is_contiguous() && self.size() == self.storage.len()
    }

    /// Overwrites this tensor with `src`'s elements on `stream` (same shape, both whole
    /// contiguous allocations).
    pub(crate) fn copy_from_tensor(
        &mut self,
        src: &Tensor<T>,
        stream: &Stream,
    ) -> Result<(), Error> {
        if self.shape != src.shape || !self.is_whole_allocation() || !src.is_whole_allocation() {
            return Err(TensorError::CopyShapes {
                dst: self.shape.clone(),
                src: src.shape.clone(),
            }
            .into());
        }
        // SAFETY: `&mut self` is the right to write the tensor's elements, as a partition of
        // `&mut Tensor` is for a kernel; other tensors over the allocation are views whose
        // borrows of this one have ended, and every use is ordered by the runtime.
        Ok(unsafe { self.storage.copy_from_device_shared(stream, &src.storage) }?)
    }

    /// A contiguous copy of the elements, submitted to `stream`.
    fn copy_on(&self, stream: &Stream) -> Result<Tensor<T>, Error> {
        if !self.is_whole_allocation() {
            let host = self.read_on(stream)?;
            return Tensor::from_slice(stream, &host, self.shape.clone());
        }
        // SAFETY: the copy below writes every element before anything can read the buffer.
        let mut buffer = unsafe { DeviceBuffer::uninit(stream, self.storage.len()) }?;
        buffer.copy_from_device(stream, &self.storage)?;
        Tensor::from_buffer(buffer, self.shape.clone())
    }

    /// The elements in row-major order, read through `stream` (waits for earlier work).
    pub(crate) fn read_on(&self, stream: &Stream) -> Result<Vec<T>, Error> {
        let all = self.storage.to_host_vec(stream)?;
        Ok(self.geometry().gather(all))
    }

    /// [`read_on`](Self::read_on) that returns before the copy has ended, where the backend
    /// can (see `cuprum_runtime::staged`): the elements come from the `Deferred` once the
    /// stream's work up to the copy has completed.
    pub(crate) fn read_deferred_on(
        &self,
        stream: &Stream,
    ) -> Result<Deferred<'static, Vec<T>>, Error> {
        let pending = self.storage.read_pending(stream)?;
        let view = self.geometry();
        Ok(Deferred::After(
            Box::new(move || Ok(view.gather(pending.finish()?))),
            Vec::new(),
        ))
    }

    /// Where the view's elements lie in its allocation.
    fn geometry(&self) -> ViewGeometry {
        ViewGeometry {
            whole: self.is_whole_allocation(),
            offset: self.offset,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
        }
    }

    /// The same elements in `shape`, which must have the same element count; the tensor
    /// must be contiguous.
    fn reshaped(self, shape: &[usize]) -> Result<Tensor<T>, Error> {
        if element_count(shape) != Some(self.size()) {
            return Err(TensorError::ReshapeCount {
                from: self.shape.clone(),
                to: shape.to_vec(),
            }
            .into());
        }
        if !self.is_contiguous() {
            return Err(TensorError::NotContiguous {
                shape: self.shape.clone(),
                strides: self.strides.clone(),
            }
            .into());
        }
        Ok(Tensor {
            storage: self.storage,
            offset: self.offset,
            strides: contiguous_strides(shape),
            shape: shape.to_vec(),
        })
    }
}

/// DLPack: tile tensors to and from PyTorch, JAX, CuPy, NumPy (see
/// [`cuprum_runtime::interop::dlpack`] for the devices and streams).
impl<T: DType> Tensor<T> {
    /// The tensor as a DLPack (v1) tensor with its shape, strides and offset, for a consumer
    /// that uses it on `stream`: zero-copy on a GPU (the tensor keeps the allocation, shared
    /// with other views, alive), a host copy on the emulator. Flagged read-only while other
    /// tensors share the allocation (they may still read or write it).
    pub fn into_dlpack(
        self,
        stream: &Stream,
    ) -> Result<cuprum_runtime::interop::dlpack::dlpark::versioned::Dlpack, Error> {
        let shared = Arc::strong_count(&self.storage) > 1;
        Ok(cuprum_runtime::interop::dlpack::export_view(
            self.storage,
            self.offset,
            &self.shape,
            &self.strides,
            stream,
            shared,
        )?)
    }

    /// A contiguous tensor of a DLPack tensor's shape and elements (v1 or legacy), imported
    /// on `stream`: over its memory for a CUDA tensor of this device, a copy for a CPU tensor
    /// (as [`DeviceBuffer::from_dlpack`]); element type, layout and device checked.
    pub fn from_dlpack<M: cuprum_runtime::interop::dlpack::dlpark::ManagedTensorBase>(
        stream: &Stream,
        tensor: cuprum_runtime::interop::dlpack::dlpark::Managed<M>,
    ) -> Result<Self, Error> {
        let imported = DeviceBuffer::<T>::from_dlpack(stream, tensor)?;
        Self::from_buffer(imported.buffer, imported.shape)
    }
}

impl<T: DType> Tensor<T> {
    /// A view of the elements in `ranges` (one range per leading axis; the axes after them
    /// whole), sharing the tensor's memory: nothing is copied, and kernels read the view
    /// through its offset and strides.
    pub fn slice(&self, ranges: &[std::ops::Range<usize>]) -> Result<TensorView<'_, T>, Error> {
        Ok(TensorView::new(self.sliced(ranges)?))
    }

    /// The elements in another shape of the same element count, sharing the tensor's memory
    /// (the tensor must be contiguous).
    pub fn view(&self, shape: &[usize]) -> Result<TensorView<'_, T>, Error> {
        Ok(TensorView::new(self.share().reshaped(shape)?))
    }

    /// Another view of the elements in `ranges` (see [`slice`](Self::slice)).
    fn sliced(&self, ranges: &[std::ops::Range<usize>]) -> Result<Tensor<T>, Error> {
        let fits = ranges.len() <= self.rank()
            && ranges
                .iter()
                .zip(&self.shape)
                .all(|(r, &n)| r.start <= r.end && r.end <= n);
        if !fits {
            return Err(TensorError::SliceOutOfRange {
                shape: self.shape.clone(),
                ranges: ranges.to_vec(),
            }
            .into());
        }
        let mut view = self.share();
        for (axis, r) in ranges.iter().enumerate() {
            view.offset += r.start * self.strides[axis];
            view.shape[axis] = r.end - r.start;
        }
        Ok(view)
    }
}

/// A view of part of a tensor, or of its elements in another shape, borrowing it: what
/// [`Tensor::slice`] and [`Tensor::view`] give. Kernels take `&TensorView` as an input.
pub struct TensorView<'a, T: DType> {
    view: Tensor<T>,
    _borrow: std::marker::PhantomData<&'a Tensor<T>>,
}

impl<T: DType> fmt::Debug for TensorView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TensorView").field(&self.view).finish()
    }
}

impl<'a, T: DType> TensorView<'a, T> {
    fn new(view: Tensor<T>) -> Self {
        Self {
            view,
            _borrow: std::marker::PhantomData,
        }
    }

    /// The size along each axis.
    pub fn shape(&self) -> &[usize] {
        self.view.shape()
    }

    /// The distance in elements between neighbours along each axis.
    pub fn strides(&self) -> &[usize] {
        self.view.strides()
    }

    /// The number of elements.
    pub fn size(&self) -> usize {
        self.view.size()
    }

    /// A view of the elements in `ranges` of this view (offsets compose).
    pub fn slice(&self, ranges: &[std::ops::Range<usize>]) -> Result<TensorView<'a, T>, Error> {
        Ok(TensorView::new(self.view.sliced(ranges)?))
    }

    /// This view's elements in another shape (the view must be contiguous).
    pub fn view(&self, shape: &[usize]) -> Result<TensorView<'a, T>, Error> {
        Ok(TensorView::new(self.view.share().reshaped(shape)?))
    }

    /// The view as a tensor, for the launch.
    pub(crate) fn tensor(&self) -> &Tensor<T> {
        &self.view
    }
}

impl<'a, 'v, T: DType> IntoDeviceOp<&'v TensorView<'a, T>> for &'v TensorView<'a, T> {
    type Op = Value<&'v TensorView<'a, T>>;
    fn into_op(self) -> Value<&'v TensorView<'a, T>> {
        value(self)
    }
}

/// `reshape` on tensors (which it consumes) and on `&Arc<Tensor>` (which gives another `Arc`
/// viewing the same allocation): the same elements, row-major, in a shape of the same
/// element count; nothing is copied.
pub trait Reshape {
    /// What the reshape gives.
    type Output;
    /// See the trait docs.
    fn reshape(self, shape: &[usize]) -> Result<Self::Output, Error>;
}

impl<T: DType> Reshape for Tensor<T> {
    type Output = Tensor<T>;
    fn reshape(self, shape: &[usize]) -> Result<Tensor<T>, Error> {
        self.reshaped(shape)
    }
}

impl<T: DType> Reshape for &Arc<Tensor<T>> {
    type Output = Arc<Tensor<T>>;
    fn reshape(self, shape: &[usize]) -> Result<Arc<Tensor<T>>, Error> {
        Ok(Arc::new(self.share().reshaped(shape)?))
    }
}

/// `to_host_vec` on tensors and `Arc`s of tensors: an operation copying the elements, in
/// row-major order, into a `Vec`.
pub trait ToHostVec<T: DType> {
    /// See the trait docs.
    fn to_host_vec(self) -> impl DeviceOp<Output = Vec<T>>;
}

impl<T: DType> ToHostVec<T> for Tensor<T> {
    fn to_host_vec(self) -> impl DeviceOp<Output = Vec<T>> {
        ReadToHost { source: self }
    }
}

impl<T: DType> ToHostVec<T> for Arc<Tensor<T>> {
    fn to_host_vec(self) -> impl DeviceOp<Output = Vec<T>> {
        ReadToHost { source: self }
    }
}

impl<T: DType> ToHostVec<T> for &Arc<Tensor<T>> {
    fn to_host_vec(self) -> impl DeviceOp<Output = Vec<T>> {
        self.clone().to_host_vec()
    }
}

impl<T: DType> ToHostVec<T> for &Tensor<T> {
    fn to_host_vec(self) -> impl DeviceOp<Output = Vec<T>> {
        ReadToHost { source: self }
    }
}

/// What [`ReadToHost`] reads: a tensor, owned, shared or borrowed.
#[doc(hidden)]
pub trait TensorSource: Send {
    /// The element type.
    type Elem: DType;
    /// The tensor.
    fn tensor(&self) -> &Tensor<Self::Elem>;
}

impl<T: DType> TensorSource for Tensor<T> {
    type Elem = T;
    fn tensor(&self) -> &Tensor<T> {
        self
    }
}

impl<T: DType> TensorSource for Arc<Tensor<T>> {
    type Elem = T;
    fn tensor(&self) -> &Tensor<T> {
        self
    }
}

impl<T: DType> TensorSource for &Tensor<T> {
    type Elem = T;
    fn tensor(&self) -> &Tensor<T> {
        self
    }
}

/// The operation `to_host_vec` makes: the tensor's elements in row-major order. Executed, it
/// returns once they are on the host; awaited, its future's first poll only starts the copy
/// (see [`op`](crate::tile::op)'s docs on `.await`).
#[doc(hidden)]
pub struct ReadToHost<S> {
    source: S,
}

impl<S: TensorSource> DeviceOp for ReadToHost<S> {
    type Output = Vec<S::Elem>;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<Vec<S::Elem>, Error> {
        self.source.tensor().read_on(ctx.stream())
    }
    unsafe fn execute_deferred<'s>(
        self,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'s, Vec<S::Elem>>, Error>
    where
        Self: 's,
    {
        self.source.tensor().read_deferred_on(ctx.stream())
    }
}
awaitable!([S: TensorSource] ReadToHost<S> => Vec<<S as TensorSource>::Elem>);

/// `to_host_vec` on operations that produce a tensor.
pub trait ToHostVecOp<T: DType>: DeviceOp<Output = Tensor<T>> {
    /// See [`ToHostVec`].
    fn to_host_vec(self) -> impl DeviceOp<Output = Vec<T>> {
        self.then(|t| t.to_host_vec())
    }
}

impl<T: DType, D: DeviceOp<Output = Tensor<T>>> ToHostVecOp<T> for D {}

/// A tensor cut into tiles of one shape: what a kernel's `&mut Tensor` output takes. Tile
/// block `(i, j, k)` of the launch owns tile `(i, j, k)`; the grid is
/// `ceil(shape / tile)` along each axis ([`partition_grid`]). `T` is the tensor, owned
/// (`Partition<Tensor<E>>`, given back by the launch) or borrowed
/// (`Partition<&mut Tensor<E>>`, written in place).
pub struct Partition<T> {
    object: T,
    tile: Vec<usize>,
}

impl<T: fmt::Debug> fmt::Debug for Partition<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Partition")
            .field("tensor", &self.object)
            .field("tile", &self.tile)
            .finish()
    }
}

impl<T> Partition<T> {
    /// The tensor, no longer partitioned.
    pub fn unpartition(self) -> T {
        self.object
    }

    /// The shape of each tile.
    pub fn partition_shape(&self) -> &[usize] {
        &self.tile
    }

    /// The partitioned tensor.
    pub(crate) fn tensor(&self) -> &T {
        &self.object
    }
}

impl<E: DType> Partition<Tensor<E>> {
    /// The number of bytes of the partitioned tensor's elements.
    pub fn num_bytes(&self) -> usize {
        self.object.num_bytes()
    }
}

impl<T: PartitionTarget> Partition<T> {
    /// The grid of tile blocks a launch over this partition has, or why there is none (a
    /// partition of another rank than its tensor, a zero tile size, more than 3 axes).
    pub fn grid(&self) -> Result<(u32, u32, u32), crate::tile::error::LaunchProblem> {
        crate::tile::launch::bind::grid_of("partition", self.object.view().shape(), &self.tile)
    }
}

impl<T> From<Partition<T>> for Arc<T> {
    fn from(p: Partition<T>) -> Self {
        Arc::new(p.object)
    }
}

/// What can be partitioned: owned tensors and `&mut` tensors.
pub trait PartitionTarget: Send + crate::tile::sealed::Sealed {
    /// The element type.
    type Elem: DType;
    /// The tensor partitioned.
    fn view(&self) -> &Tensor<Self::Elem>;
}

impl<T: DType> crate::tile::sealed::Sealed for Tensor<T> {}
impl<T: DType> PartitionTarget for Tensor<T> {
    type Elem = T;
    fn view(&self) -> &Tensor<T> {
        self
    }
}

impl<T: DType> crate::tile::sealed::Sealed for &mut Tensor<T> {}
impl<T: DType> PartitionTarget for &mut Tensor<T> {
    type Elem = T;
    fn view(&self) -> &Tensor<T> {
        self
    }
}

/// `partition` on tensors: cuts the tensor into tiles of `tile` (one size per axis; checked
/// at launch).
pub trait IntoPartition: Sized {
    /// See the trait docs.
    fn partition<const RANK: usize>(self, tile: [usize; RANK]) -> Partition<Self>;
}

impl<T: PartitionTarget> IntoPartition for T {
    fn partition<const RANK: usize>(self, tile: [usize; RANK]) -> Partition<Self> {
        Partition {
            object: self,
            tile: tile.to_vec(),
        }
    }
}

/// `try_partition` on an `Arc` of a tensor: partitions the tensor when the `Arc` is its only
/// owner ([`Error::ArcShared`] otherwise).
pub trait TryPartition<T: DType> {
    /// See the trait docs.
    fn try_partition<const RANK: usize>(
        self,
        tile: [usize; RANK],
    ) -> Result<Partition<Tensor<T>>, Error>;
}

impl<T: DType> TryPartition<T> for Arc<Tensor<T>> {
    fn try_partition<const RANK: usize>(
        self,
        tile: [usize; RANK],
    ) -> Result<Partition<Tensor<T>>, Error> {
        let owners = Arc::strong_count(&self);
        Arc::try_unwrap(self)
            .map(|t| t.partition(tile))
            .map_err(|_| Error::ArcShared {
                what: "try_partition",
                owners,
            })
    }
}

/// `partition` on operations that produce a tensor: partitions it when it is produced.
pub trait PartitionOp: DeviceOp<Output: IntoPartition> {
    /// See [`IntoPartition`].
    fn partition<const RANK: usize>(
        self,
        tile: [usize; RANK],
    ) -> impl DeviceOp<Output = Partition<<Self as DeviceOp>::Output>> {
        self.map(move |t| t.partition(tile))
    }
}

impl<D: DeviceOp<Output: IntoPartition>> PartitionOp for D {}

/// `unpartition` on operations that produce a partition: the tensor, no longer partitioned.
pub trait Unpartition<T: Send>: DeviceOp<Output = Partition<T>> {
    /// See the trait docs.
    fn unpartition(self) -> impl DeviceOp<Output = T> {
        self.map(Partition::unpartition)
    }
}

impl<T: Send, D: DeviceOp<Output = Partition<T>>> Unpartition<T> for D {}

impl<T: DType> IntoDeviceOp<Tensor<T>> for Tensor<T> {
    type Op = Value<Tensor<T>>;
    fn into_op(self) -> Value<Tensor<T>> {
        value(self)
    }
}

impl<'a, T: DType> IntoDeviceOp<&'a Tensor<T>> for &'a Tensor<T> {
    type Op = Value<&'a Tensor<T>>;
    fn into_op(self) -> Value<&'a Tensor<T>> {
        value(self)
    }
}

impl<T: PartitionTarget> IntoDeviceOp<Partition<T>> for Partition<T> {
    type Op = Value<Partition<T>>;
    fn into_op(self) -> Value<Partition<T>> {
        value(self)
    }
}

/// Where a tensor view's elements lie in its allocation: what a read needs to pick them out
/// of a copy of the whole allocation, after the tensor itself may be gone.
struct ViewGeometry {
    /// Whether the view is the whole allocation in row-major order.
    whole: bool,
    offset: usize,
    shape: Vec<usize>,
    strides: Vec<usize>,
}

impl ViewGeometry {
    /// The view's elements in row-major order, from `all`, the whole allocation.
    fn gather<T: Copy>(&self, all: Vec<T>) -> Vec<T> {
        if self.whole {
            return all;
        }
        let size: usize = self.shape.iter().product();
        let mut out = Vec::with_capacity(size);
        if size == 0 {
            return out;
        }
        let rank = self.shape.len();
        let mut index = vec![0usize; rank];
        loop {
            let at = self.offset
                + index
                    .iter()
                    .zip(&self.strides)
                    .map(|(i, s)| i * s)
                    .sum::<usize>();
            out.push(all[at]);
            // The next row-major index; done when every axis wrapped.
            let mut axis = rank;
            loop {
                if axis == 0 {
                    return out;
                }
                axis -= 1;
                index[axis] += 1;
                if index[axis] < self.shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
    }
}
