//! The [`GpuIter`] trait, its adapters (`map`, `filter`, `zip`, `enumerate`) and its
//! sources (`GpuVec<T>` by value, `&GpuVec<T>` by reference).
//!
//! Adapters are lazy and hold their closures; nothing touches the device until a terminal
//! method (`collect`, `materialize`, `sum`, `min`, `max`, `count`, `reduce`). The terminal
//! *emits* the chain once: every source binds its buffer as a kernel input and yields an
//! [`Expr`] for "the current element", every adapter calls its closure once on those
//! handles, and what comes out is traced into one kernel (see `exec.rs`).
//!
//! `zip` and `enumerate` need every element in place, so they exist only on [`Dense`]
//! chains: after a `filter`, the k-th survivor's partner or position is not known without
//! running the filter first. That is a compile error, not a surprise at run time.

use cuprum_ir::ScalarType;
use cuprum_runtime::{Error, KernelArg};

use crate::GpuResult;
use crate::device::{GpuDevice, GpuVec};
use crate::exec;
use crate::expr::{Element, Expr, Numeric, Traced};
use crate::trace::{Node, TraceGuard};

/// What a chain's emission builds: the trace being recorded and the inputs bound so far.
/// Only the crate can make one, so [`GpuIter`]'s hidden methods cannot be called from outside.
#[doc(hidden)]
pub struct EmitCx {
    pub(crate) trace: TraceGuard,
    pub(crate) device: GpuDevice,
    /// One per input slot: the slice argument and its element type.
    pub(crate) inputs: Vec<(KernelArg, ScalarType)>,
    /// The conjunction of every filter so far.
    pub(crate) mask: Option<Expr<bool>>,
}

impl EmitCx {
    /// Emission into `trace` (recording, or replaying a log).
    pub(crate) fn new(device: GpuDevice, trace: TraceGuard) -> Self {
        Self {
            trace,
            device,
            inputs: Vec::new(),
            mask: None,
        }
    }

    /// Binds `v` as an input (once, however often the chain reads it) and gives its current
    /// element.
    fn input<T: Element>(&mut self, v: &GpuVec<T>) -> GpuResult<Expr<T>> {
        if !v.device().same(&self.device) {
            return Err(Error::ContextMismatch);
        }
        let arg = KernelArg::slice(v.buffer());
        let slot = match self
            .inputs
            .iter()
            .position(|&(a, ty)| a == arg && ty == T::TYPE)
        {
            Some(slot) => slot,
            None => {
                self.inputs.push((arg, T::TYPE));
                self.inputs.len() - 1
            }
        };
        Ok(Expr::from_ref(
            self.trace.leaf(Node::Input(slot as u32), T::TYPE),
        ))
    }

    fn index(&mut self) -> Expr<usize> {
        Expr::from_ref(self.trace.leaf(Node::Index, ScalarType::U64))
    }

    fn filter(&mut self, keep: Expr<bool>) {
        let mask = match self.mask {
            Some(m) => m & keep,
            None => keep,
        };
        self.mask = Some(mask);
        self.trace.set_guard(self.trace.resolve(mask.r));
    }
}

/// Chains whose elements are all present (no `filter` yet): only these can be zipped or
/// enumerated.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is filtered, so it cannot be zipped or enumerated",
    label = "this chain has a `filter`",
    note = "`zip` and `enumerate` pair elements by position, which a `filter` changes: zip or \
            enumerate before filtering, or `materialize` the filtered values first"
)]
pub trait Dense: GpuIter {}

/// A chain of operations over device vectors, run as one fused kernel by its terminal
/// method. See the [crate docs](crate) for the model and the examples.
pub trait GpuIter: Sized {
    /// What the closures of the next adapter receive: an [`Expr`], or a tuple of them.
    type Item: Traced;

    /// Number of elements before any filter (the length of the sources).
    #[doc(hidden)]
    fn dense_len(&self) -> usize;

    /// The device of the chain's first source.
    #[doc(hidden)]
    fn source_device(&self) -> &GpuDevice;

    /// Binds the chain's inputs and traces its closures.
    #[doc(hidden)]
    fn emit(&self, cx: &mut EmitCx) -> GpuResult<Self::Item>;

    /// Applies `f` to every element (traced once, not run per element).
    fn map<O: Traced, F: Fn(Self::Item) -> O>(self, f: F) -> Map<Self, F> {
        Map { inner: self, f }
    }

    /// Keeps the elements for which `keep` is true. The closure takes the element by value
    /// (it is a handle), not by reference as `Iterator::filter` does.
    fn filter<P: Fn(Self::Item) -> Expr<bool>>(self, keep: P) -> Filter<Self, P> {
        Filter { inner: self, keep }
    }

    /// Pairs elements by position. The lengths must be equal: the terminal call fails with
    /// `Error::LengthMismatch` otherwise (no silent truncation). Zip three or more with
    /// `a.zip(b).zip(c)`, whose items are `((x, y), z)`.
    fn zip<B: Dense>(self, other: B) -> Zip<Self, B>
    where
        Self: Dense,
    {
        Zip { a: self, b: other }
    }

    /// Pairs each element with its index, `(Expr<usize>, item)`.
    fn enumerate(self) -> Enumerate<Self>
    where
        Self: Dense,
    {
        Enumerate { inner: self }
    }

    /// Runs the chain into a new device vector (one kernel; with a `filter`, two: a count
    /// pass and an order-keeping scatter pass).
    fn materialize<T: Element>(self, device: &GpuDevice) -> GpuResult<GpuVec<T>>
    where
        Self: GpuIter<Item = Expr<T>>,
    {
        exec::materialize(&self, device)
    }

    /// Runs the chain and copies the result to the host.
    fn collect<T: Element>(self, device: &GpuDevice) -> GpuResult<Vec<T>>
    where
        Self: GpuIter<Item = Expr<T>>,
    {
        exec::materialize(&self, device)?.to_vec()
    }

    /// The sum, accumulated in `T` (integers wrap; floats are added in a tree order, not
    /// left to right, so the rounding differs from a sequential sum: the error is bounded by
    /// about `(n / threads + 30) * eps * sum(|x|)`; `f16`/`bf16` sums lose precision fast,
    /// so sum `x.cast::<f32>()` instead). Empty: zero.
    fn sum<T: Numeric>(self) -> GpuResult<T>
    where
        Self: GpuIter<Item = Expr<T>>,
    {
        exec::sum(&self)
    }

    /// Like [`sum`](Self::sum), but the result stays on the device (a vector of one
    /// element), so that nothing waits for it: for pipelines and for timing.
    fn sum_on_device<T: Numeric>(self) -> GpuResult<GpuVec<T>>
    where
        Self: GpuIter<Item = Expr<T>>,
    {
        exec::sum_on_device(&self)
    }

    /// The smallest element (for floats, NaNs are ignored as `f32::min` does, so the result
    /// is NaN only when every element is); `None` when there is none.
    fn min<T: Numeric>(self) -> GpuResult<Option<T>>
    where
        Self: GpuIter<Item = Expr<T>>,
    {
        exec::extremum(&self, true)
    }

    /// The largest element (NaNs ignored, as `f32::max` does); `None` when there is none.
    fn max<T: Numeric>(self) -> GpuResult<Option<T>>
    where
        Self: GpuIter<Item = Expr<T>>,
    {
        exec::extremum(&self, false)
    }

    /// The number of elements. Without a `filter` this is the sources' length and nothing
    /// runs on the device (the chain is still traced, so its errors are still reported).
    fn count(self) -> GpuResult<usize> {
        exec::count(&self)
    }

    /// Combines all elements with `op`, starting from `identity`. `op` is traced once; it
    /// must be associative and commutative and `identity` must be its identity (the device
    /// combines in a tree, in no fixed order). Empty: `identity`.
    ///
    /// ```
    /// use cuprum_iter::prelude::*;
    ///
    /// # fn main() -> GpuResult<()> {
    /// let device = GpuDevice::default()?;
    /// let x: Vec<u32> = (0..3000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    /// let v = device.upload(&x)?;
    ///
    /// let xor = (&v).reduce(0u32, |a, b| a ^ b)?;
    /// assert_eq!(xor, x.iter().fold(0, |a, b| a ^ b));
    /// let (lo, hi) = ((&v).min()?, (&v).max()?);
    /// assert_eq!((lo, hi), (x.iter().copied().min(), x.iter().copied().max()));
    /// # Ok(())
    /// # }
    /// ```
    fn reduce<T: Element, F: Fn(Expr<T>, Expr<T>) -> Expr<T>>(
        self,
        identity: T,
        op: F,
    ) -> GpuResult<T>
    where
        Self: GpuIter<Item = Expr<T>>,
    {
        exec::reduce(&self, identity, op)
    }
}

/// See [`GpuIter::map`].
#[derive(Clone)]
pub struct Map<I, F> {
    inner: I,
    f: F,
}

/// See [`GpuIter::filter`].
#[derive(Clone)]
pub struct Filter<I, P> {
    inner: I,
    keep: P,
}

/// See [`GpuIter::zip`].
#[derive(Clone)]
pub struct Zip<A, B> {
    a: A,
    b: B,
}

/// See [`GpuIter::enumerate`].
#[derive(Clone)]
pub struct Enumerate<I> {
    inner: I,
}

impl<T: Element> GpuIter for GpuVec<T> {
    type Item = Expr<T>;
    fn dense_len(&self) -> usize {
        self.len()
    }
    fn source_device(&self) -> &GpuDevice {
        self.device()
    }
    fn emit(&self, cx: &mut EmitCx) -> GpuResult<Expr<T>> {
        cx.input(self)
    }
}
impl<T: Element> Dense for GpuVec<T> {}

impl<T: Element> GpuIter for &GpuVec<T> {
    type Item = Expr<T>;
    fn dense_len(&self) -> usize {
        self.len()
    }
    fn source_device(&self) -> &GpuDevice {
        self.device()
    }
    fn emit(&self, cx: &mut EmitCx) -> GpuResult<Expr<T>> {
        cx.input(self)
    }
}
impl<T: Element> Dense for &GpuVec<T> {}

impl<I: GpuIter, O: Traced, F: Fn(I::Item) -> O> GpuIter for Map<I, F> {
    type Item = O;
    fn dense_len(&self) -> usize {
        self.inner.dense_len()
    }
    fn source_device(&self) -> &GpuDevice {
        self.inner.source_device()
    }
    fn emit(&self, cx: &mut EmitCx) -> GpuResult<O> {
        let item = self.inner.emit(cx)?;
        Ok((self.f)(item))
    }
}
impl<I: Dense, O: Traced, F: Fn(I::Item) -> O> Dense for Map<I, F> {}

impl<I: GpuIter, P: Fn(I::Item) -> Expr<bool>> GpuIter for Filter<I, P> {
    type Item = I::Item;
    fn dense_len(&self) -> usize {
        self.inner.dense_len()
    }
    fn source_device(&self) -> &GpuDevice {
        self.inner.source_device()
    }
    fn emit(&self, cx: &mut EmitCx) -> GpuResult<I::Item> {
        let item = self.inner.emit(cx)?;
        let keep = (self.keep)(item);
        cx.filter(keep);
        Ok(item)
    }
}

impl<A: Dense, B: Dense> GpuIter for Zip<A, B> {
    type Item = (A::Item, B::Item);
    fn dense_len(&self) -> usize {
        self.a.dense_len()
    }
    fn source_device(&self) -> &GpuDevice {
        self.a.source_device()
    }
    fn emit(&self, cx: &mut EmitCx) -> GpuResult<Self::Item> {
        let (la, lb) = (self.a.dense_len(), self.b.dense_len());
        if la != lb {
            return Err(Error::LengthMismatch {
                what: "the second chain of a `zip` (zipped chains must have equal lengths; \
                       cuprum does not truncate)"
                    .to_owned(),
                expected: la,
                actual: lb,
            });
        }
        Ok((self.a.emit(cx)?, self.b.emit(cx)?))
    }
}
impl<A: Dense, B: Dense> Dense for Zip<A, B> {}

impl<I: Dense> GpuIter for Enumerate<I> {
    type Item = (Expr<usize>, I::Item);
    fn dense_len(&self) -> usize {
        self.inner.dense_len()
    }
    fn source_device(&self) -> &GpuDevice {
        self.inner.source_device()
    }
    fn emit(&self, cx: &mut EmitCx) -> GpuResult<Self::Item> {
        let index = cx.index();
        Ok((index, self.inner.emit(cx)?))
    }
}
impl<I: Dense> Dense for Enumerate<I> {}
