//! [`GpuDevice`] and [`GpuVec`]: the two host-side types an iterator-track user holds, and the
//! kernel caches that make a second run of the same chain compile nothing.
//!
//! A `GpuDevice` is a runtime context (GPU or emulator), the stream all its work goes to, its
//! launch [`Tuning`] and three caches:
//! * kernels by their IR (its printed text, confirmed by comparing the IR): two calls whose
//!   kernels differ can never share one, two whose kernels agree always do;
//! * in front of it, kernels by the trace that generates them (`exec::KernelKey`: the traced
//!   graphs with host values replaced by their parameter slots, and the generator's
//!   settings), so that a chain of a known structure costs a hash instead of generating and
//!   printing IR;
//! * in front of that, the last call of each chain type and terminal (`plan::Plan`): its
//!   trace logs and kernels, which a repeated call uses only after replaying every trace
//!   exactly (see `plan.rs`), so that it costs a comparison per traced operation and no hash
//!   of its graph. The closures' types only say which plan to try, never which kernel runs.
//!
//! Host values the closures capture are kernel parameters, not part of the IR, so a closure
//! that captures another value next call reuses the kernel and still sees the new value.
//! (When a captured value happens to equal another constant of the same chain, the two
//! share one parameter, which is another trace and another kernel: still the right one.)

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cuprum_ir::Module;
use cuprum_runtime::{
    CudaContext, DeviceBuffer, Error, KernelArg, LaunchConfig, LoadedModule, RuntimeStats, Stream,
};

use crate::exec::KernelKey;
use crate::expr::Element;
use crate::plan::{Plan, PlanKey};
use crate::{GpuError, GpuResult};

/// How generated kernels spread work over the device. The defaults aim at memory bandwidth;
/// change them to measure alternatives ([`GpuDevice::set_tuning`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// Threads per block (a multiple of 32, at most 1024).
    pub block: u32,
    /// Blocks per multiprocessor: the grid is `multiprocessor_count * blocks_per_sm` blocks
    /// (fewer when the input is small), and every thread strides over the data.
    pub blocks_per_sm: u32,
    /// Bytes each thread reads from each input per loop iteration (at least one element;
    /// 32 bytes is 8 `f32`s). More bytes in flight per thread hide more memory latency.
    pub bytes_per_thread: u32,
    /// Where a thread's elements of one iteration lie. See [`Layout`].
    pub layout: Layout,
    /// The widest global access, in bytes (at most 16): a thread's elements move in runs of
    /// up to this many bytes, each with one vector load or store (`ld.global.nc.v4.f32` for
    /// 16 bytes of `f32`). Slices handed to generated kernels start at the beginning of their
    /// allocation, so runs at multiples of the run length are aligned. 0 (or one element's
    /// size) means scalar accesses only.
    pub vector_bytes: u32,
}

/// Where a thread's elements of one loop iteration lie ([`Tuning::layout`]).
///
/// Both move a thread's elements in runs of up to [`Tuning::vector_bytes`] with vector
/// accesses. With [`WarpStrided`](Self::WarpStrided) (the default) every warp-wide access
/// reads or writes one contiguous span (32 lanes x one run); with
/// [`Consecutive`](Self::Consecutive) a thread's runs follow each other, so one warp-wide
/// access touches every other run's cache lines and the next access the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// A thread's `k` elements of one iteration are consecutive in memory.
    Consecutive,
    /// A warp's `32 k` elements are consecutive; a thread's are 32 elements apart.
    WarpStrided,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            block: 256,
            blocks_per_sm: 4,
            bytes_per_thread: 32,
            layout: Layout::WarpStrided,
            vector_bytes: 16,
        }
    }
}

impl Tuning {
    /// Elements of `size` bytes per thread and iteration (a power of two, 1 to 16).
    pub(crate) fn elems_per_thread(&self, size: u32) -> u32 {
        let k = (self.bytes_per_thread / size.max(1)).clamp(1, 16);
        1 << k.ilog2()
    }

    /// Elements of `size` bytes per vector access (1, 2 or 4; at most
    /// [`elems_per_thread`](Self::elems_per_thread)).
    pub(crate) fn vector_elems(&self, size: u32) -> u32 {
        let v = (self.vector_bytes.min(16) / size.max(1)).clamp(1, 4);
        (1 << v.ilog2()).min(self.elems_per_thread(size))
    }

    /// The default tuning of element-wise kernels (`collect`/`materialize` without `filter`):
    /// [`Tuning::default`] with 2 blocks per multiprocessor. Measured on an H200 (2^28 `f32`,
    /// `zip` + `map` + `materialize`): 0.758 ms against 0.78 ms with 4 blocks per
    /// multiprocessor; fewer threads writing at once keep more of the DRAM bandwidth.
    pub fn for_maps() -> Self {
        Self {
            blocks_per_sm: 2,
            ..Self::default()
        }
    }

    /// The default tuning of reductions (`sum`, `min`, `max`, `reduce`, `count`):
    /// [`Tuning::default`] with 64 bytes per thread and iteration, so that more loads are in
    /// flight before each thread's accumulator needs them (2^28 `f32` `sum` on an H200:
    /// 0.244 ms against 0.251 ms with 32 bytes).
    pub fn for_reductions() -> Self {
        Self {
            bytes_per_thread: 64,
            ..Self::default()
        }
    }

    fn check(&self) -> GpuResult<()> {
        if self.block == 0 || !self.block.is_multiple_of(32) || self.block > 1024 {
            return Err(Error::Unsupported {
                what: format!(
                    "iterator tuning: block = {} must be a multiple of 32 between 32 and 1024",
                    self.block
                ),
            });
        }
        if self.blocks_per_sm == 0 {
            return Err(Error::Unsupported {
                what: "iterator tuning: blocks_per_sm must be at least 1".to_owned(),
            });
        }
        Ok(())
    }
}

/// What the iterator track did on a device's behalf, on the host, since the device was made
/// ([`GpuDevice::chain_stats`]): how many terminal calls traced their chain and how many
/// kernels it generated, and where the host time went. For tests (a repeated chain must not
/// generate again) and for profiling (the `trace_scaling` example prints these).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChainStats {
    /// Traces recorded: a terminal call runs its chain's closures (and a reduction's
    /// combining function) on [`Expr`](crate::Expr) handles and records the graph they make,
    /// the first time, or when the graph is not the one the same chain made last time.
    pub traces: u64,
    /// Traces replayed: the closures ran and made, operation for operation, the graph the
    /// same chain made last time (with new host values, perhaps), so nothing was recorded.
    /// A call whose traces all replay launches the kernels of the last call, generating and
    /// looking up nothing.
    pub replays: u64,
    /// Kernels a call launched straight from the plan of the last call of the same chain,
    /// after replaying its traces: no kernel key computed, nothing looked up or generated.
    pub kernels_reused: u64,
    /// Kernels generated from a traced graph (graph -> IR), whether or not the IR then
    /// matched a kernel compiled before.
    pub kernels_generated: u64,
    /// Kernels compiled and loaded (IR never seen before on this device).
    pub kernels_loaded: u64,
    /// Host time spent tracing (running the closures, recording or replaying).
    pub trace_time: Duration,
    /// Host time spent finding kernels in the caches (computing their keys included).
    pub lookup_time: Duration,
    /// Host time spent generating kernel IR from graphs.
    pub generate_time: Duration,
    /// Host time spent loading generated kernels: the IR cache key (printed IR),
    /// validation, and on a GPU the PTX writer and the driver's compiler.
    pub load_time: Duration,
}

/// Set this environment variable (to anything) to have every kernel the iterator track
/// compiles printed to stderr, as IR and (on a GPU) as PTX.
pub const DUMP_ENV_VAR: &str = "CUPRUM_ITER_DUMP";

/// Printed IR -> the modules with that text (normally one) and their loaded form.
type KernelCache = HashMap<String, Vec<(Arc<Module>, Arc<LoadedModule>)>>;

struct Inner {
    ctx: CudaContext,
    stream: Stream,
    /// The tuning [`GpuDevice::set_tuning`] chose for every kernel; `None`: each kind of
    /// kernel runs with its own default ([`Tuning::for_maps`], [`Tuning::for_reductions`],
    /// [`Tuning::default`] for `filter`).
    tuning: Mutex<Option<Tuning>>,
    /// See [`GpuDevice::set_poison_outputs`].
    poison_outputs: AtomicBool,
    /// Traced chain (host values as parameter slots) -> its loaded kernel and the elements
    /// per thread it was generated for; in front of `cache`, so that a repeated chain costs
    /// a hash of its trace, not the generation and printing of its IR.
    traces: Mutex<HashMap<KernelKey, (Arc<LoadedModule>, u32)>>,
    cache: Mutex<KernelCache>,
    /// The last call of each chain and terminal, in front of `traces` (see `plan.rs`).
    plans: Mutex<HashMap<PlanKey, Arc<Plan>>>,
    /// See [`GpuDevice::chain_stats`].
    chain_stats: Mutex<ChainStats>,
}

/// A device for iterator chains: a GPU, or the CPU emulator where there is none. Cheap to
/// clone (clones share the context, stream and kernel cache).
///
/// A chain is compiled the first time it runs; captured host scalars are kernel parameters,
/// so running it again with other values reuses the kernel:
///
/// ```
/// use cuprum_iter::prelude::*;
///
/// # fn main() -> GpuResult<()> {
/// let device = GpuDevice::default()?;
/// let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25).collect();
/// let v = device.upload(&x)?;
///
/// for scale in [2.0f32, -3.0] {
///     let y = (&v).map(move |e| e * scale + 1.0).collect(&device)?;
///     let want: Vec<f32> = x.iter().map(|e| e * scale + 1.0).collect();
///     assert_eq!(y, want);
/// }
/// // One kernel, launched twice; the second call replayed the first one's trace.
/// assert_eq!(device.cached_kernels(), 1);
/// assert_eq!(device.stats().launches, 2);
/// let stats = device.chain_stats();
/// assert_eq!((stats.traces, stats.replays, stats.kernels_generated), (1, 1, 1));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct GpuDevice {
    inner: Arc<Inner>,
}

impl fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuDevice")
            .field("context", &self.inner.ctx)
            .finish()
    }
}

impl GpuDevice {
    /// Device 0 on the backend `CUPRUM_DEVICE` selects: the GPU when there is one, else the
    /// CPU emulator (`auto`, the default, says so once on stderr).
    #[allow(clippy::should_implement_trait)] // fallible, so it cannot be `Default::default`
    pub fn default() -> GpuResult<Self> {
        Self::new(0)
    }

    /// Device `ordinal` on the backend `CUPRUM_DEVICE` selects.
    pub fn new(ordinal: usize) -> GpuResult<Self> {
        Ok(Self::from_context(CudaContext::new(ordinal)?))
    }

    /// Wraps an existing context; chains run on its default stream.
    pub fn from_context(ctx: CudaContext) -> Self {
        let stream = ctx.default_stream();
        Self {
            inner: Arc::new(Inner {
                ctx,
                stream,
                tuning: Mutex::new(None),
                poison_outputs: AtomicBool::new(false),
                traces: Mutex::new(HashMap::new()),
                cache: Mutex::new(HashMap::new()),
                plans: Mutex::new(HashMap::new()),
                chain_stats: Mutex::new(ChainStats::default()),
            }),
        }
    }

    /// The runtime context (for its backend, limits and [`stats`](CudaContext::stats)).
    pub fn context(&self) -> &CudaContext {
        &self.inner.ctx
    }

    /// The stream every chain of this device runs on, in order.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Launch and allocation counters of the context.
    pub fn stats(&self) -> RuntimeStats {
        self.inner.ctx.stats()
    }

    /// What the iterator track did for this device's chains (shared by its clones): traces,
    /// generated and loaded kernels, and the host time each step took.
    pub fn chain_stats(&self) -> ChainStats {
        self.inner
            .chain_stats
            .lock()
            .map(|s| *s)
            .unwrap_or_default()
    }

    /// Updates the [`ChainStats`].
    pub(crate) fn note(&self, update: impl FnOnce(&mut ChainStats)) {
        if let Ok(mut stats) = self.inner.chain_stats.lock() {
            update(&mut stats);
        }
    }

    /// Copies `data` to the device.
    pub fn upload<T: Element>(&self, data: &[T]) -> GpuResult<GpuVec<T>> {
        Ok(GpuVec {
            buffer: DeviceBuffer::from_host(&self.inner.stream, data)?,
            device: self.clone(),
        })
    }

    /// Wraps a buffer of this device's context.
    pub fn wrap<T: Element>(&self, buffer: DeviceBuffer<T>) -> GpuResult<GpuVec<T>> {
        if !buffer.context().same_context(&self.inner.ctx) {
            return Err(Error::ContextMismatch);
        }
        Ok(GpuVec {
            buffer,
            device: self.clone(),
        })
    }

    /// The launch tuning set with [`set_tuning`](Self::set_tuning), or [`Tuning::default`]
    /// (the tuning of `filter` kernels) when each kind of kernel runs with its own default.
    pub fn tuning(&self) -> Tuning {
        self.explicit_tuning().unwrap_or_default()
    }

    fn explicit_tuning(&self) -> Option<Tuning> {
        self.inner.tuning.lock().ok().and_then(|t| *t)
    }

    /// The tuning element-wise kernels (`collect`/`materialize` without `filter`) launch
    /// with: the one [`set_tuning`](Self::set_tuning) chose, else [`Tuning::for_maps`].
    pub fn map_tuning(&self) -> Tuning {
        self.explicit_tuning().unwrap_or_else(Tuning::for_maps)
    }

    /// The tuning reductions (`sum`, `min`, `max`, `reduce`, `count`) launch with: the one
    /// [`set_tuning`](Self::set_tuning) chose, else [`Tuning::for_reductions`].
    pub fn reduction_tuning(&self) -> Tuning {
        self.explicit_tuning()
            .unwrap_or_else(Tuning::for_reductions)
    }

    /// Makes every kernel of this device (and its clones) launch with `tuning`, instead of
    /// the default of its kind. Kernels already compiled for other settings stay cached.
    pub fn set_tuning(&self, tuning: Tuning) -> GpuResult<()> {
        tuning.check()?;
        if let Ok(mut t) = self.inner.tuning.lock() {
            *t = Some(tuning);
        }
        Ok(())
    }

    /// With `true`, every output buffer is filled with a poison pattern before the kernel
    /// writes it (costs a host-to-device copy; for tests, so that an element a kernel misses
    /// cannot pass). Applies to this device and its clones.
    pub fn set_poison_outputs(&self, poison: bool) {
        self.inner.poison_outputs.store(poison, Ordering::Relaxed);
    }

    /// Goes back to the default tuning of each kind of kernel ([`Tuning::for_maps`],
    /// [`Tuning::for_reductions`], [`Tuning::default`] for `filter`).
    pub fn reset_tuning(&self) {
        if let Ok(mut t) = self.inner.tuning.lock() {
            *t = None;
        }
    }

    /// How many distinct kernels this device has compiled and cached.
    pub fn cached_kernels(&self) -> usize {
        self.inner
            .cache
            .lock()
            .map(|c| c.values().map(Vec::len).sum())
            .unwrap_or(0)
    }

    /// The IR of every kernel this device has compiled (one module each), for inspection
    /// and tools: print it with `cuprum_ir::print_module`, or write PTX from it.
    pub fn compiled_modules(&self) -> Vec<Arc<Module>> {
        self.inner
            .cache
            .lock()
            .map(|c| c.values().flatten().map(|(m, _)| m.clone()).collect())
            .unwrap_or_default()
    }

    /// Waits for all work of this device.
    pub fn synchronize(&self) -> GpuResult<()> {
        self.inner.stream.synchronize()
    }

    pub(crate) fn same(&self, other: &GpuDevice) -> bool {
        self.inner.ctx.same_context(&other.inner.ctx)
    }

    pub(crate) fn find_kernel(&self, key: &KernelKey) -> Option<(Arc<LoadedModule>, u32)> {
        self.inner.traces.lock().ok()?.get(key).cloned()
    }

    pub(crate) fn find_plan(&self, key: &PlanKey) -> Option<Arc<Plan>> {
        self.inner.plans.lock().ok()?.get(key).cloned()
    }

    pub(crate) fn remember_plan(&self, key: PlanKey, plan: Arc<Plan>) {
        if let Ok(mut plans) = self.inner.plans.lock() {
            plans.insert(key, plan);
        }
    }

    pub(crate) fn remember_kernel(&self, key: KernelKey, module: Arc<LoadedModule>, k: u32) {
        if let Ok(mut traces) = self.inner.traces.lock() {
            traces.insert(key, (module, k));
        }
    }

    /// The loaded form of `module`, compiled on first use.
    pub(crate) fn load(&self, module: Module) -> GpuResult<Arc<LoadedModule>> {
        let key = cuprum_ir::print_module(&module);
        let poisoned = || Error::Unsupported {
            what: "the iterator kernel cache lock was poisoned by a panic in another thread"
                .to_owned(),
        };
        {
            let cache = self.inner.cache.lock().map_err(|_| poisoned())?;
            if let Some(hit) = cache
                .get(&key)
                .and_then(|v| v.iter().find(|(m, _)| **m == module))
            {
                return Ok(hit.1.clone());
            }
        }
        let module = Arc::new(module);
        let loaded = Arc::new(LoadedModule::load(&self.inner.ctx, module.clone())?);
        self.note(|s| s.kernels_loaded += 1);
        if std::env::var_os(DUMP_ENV_VAR).is_some() {
            eprintln!("cuprum-iter: compiled a kernel\n{key}");
            if let Some(ptx) = loaded.ptx() {
                eprintln!("{ptx}");
            }
        }
        let mut cache = self.inner.cache.lock().map_err(|_| poisoned())?;
        cache.entry(key).or_default().push((module, loaded.clone()));
        Ok(loaded)
    }

    /// Launches kernel 0 of `module`.
    ///
    /// # Safety
    /// As [`LoadedModule::launch`]: the slices are live buffers of this context whose element
    /// types are the parameters', written slices alias nothing else of the launch, and the
    /// kernel stays inside them.
    pub(crate) unsafe fn launch(
        &self,
        module: &LoadedModule,
        config: LaunchConfig,
        args: &[KernelArg],
    ) -> GpuResult<()> {
        // SAFETY: the caller's contract.
        unsafe { module.launch(&self.inner.stream, 0, &config, args) }
    }

    /// A buffer of `len` elements for a kernel to fill completely before anyone reads it.
    pub(crate) fn output<T: Element>(&self, len: usize) -> GpuResult<DeviceBuffer<T>> {
        if self.inner.poison_outputs.load(Ordering::Relaxed) {
            let poison = T::from_bits(0xCDCD_CDCD_CDCD_CDCD);
            return DeviceBuffer::from_host(&self.inner.stream, &vec![poison; len]);
        }
        // SAFETY: callers hand the buffer out only after a kernel wrote every element (a
        // failed launch drops it unread).
        unsafe { DeviceBuffer::uninit(&self.inner.stream, len) }
    }
}

/// A vector in device memory: what chains read and what `materialize` makes.
///
/// `materialize` keeps a chain's result on the device for the next chain; borrowing a vector
/// (`&v` or `v.iter()`) keeps it usable afterwards:
///
/// ```
/// use cuprum_iter::prelude::*;
///
/// # fn main() -> GpuResult<()> {
/// let device = GpuDevice::default()?;
/// let x: Vec<i32> = (0..500).map(|i| (i * 37) % 101 - 50).collect();
/// let v = device.upload(&x)?;
/// assert_eq!(v.len(), 500);
///
/// // Squares stay on the device...
/// let squares: GpuVec<i32> = v.iter().map(|e| e * e).materialize(&device)?;
/// // ...for a second chain: the indices of the negative inputs whose square is below 100.
/// let picked = (&v)
///     .zip(&squares)
///     .enumerate()
///     .filter(|(_, (e, sq))| e.lt(0) & sq.lt(100))
///     .map(|(i, _)| i)
///     .collect(&device)?;
/// let want: Vec<usize> = (0..x.len()).filter(|&i| x[i] < 0 && x[i] * x[i] < 100).collect();
/// assert_eq!(picked, want); // filter keeps the order
///
/// assert_eq!(v.to_vec()?, x); // `v` was only borrowed
/// assert_eq!(squares.to_vec()?, x.iter().map(|e| e * e).collect::<Vec<_>>());
/// # Ok(())
/// # }
/// ```
pub struct GpuVec<T: Element> {
    buffer: DeviceBuffer<T>,
    device: GpuDevice,
}

impl<T: Element> fmt::Debug for GpuVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuVec")
            .field("elem", &T::TYPE)
            .field("len", &self.buffer.len())
            .finish()
    }
}

impl<T: Element> GpuVec<T> {
    pub(crate) fn from_parts(buffer: DeviceBuffer<T>, device: GpuDevice) -> Self {
        Self { buffer, device }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// Copies the elements to the host (waits for earlier work on the device's stream).
    pub fn to_vec(&self) -> GpuResult<Vec<T>> {
        self.buffer.to_host_vec(&self.device.inner.stream)
    }

    /// A chain source that borrows the vector (the same as `&vec`), so that it stays
    /// usable: `a.iter().zip(b.iter())`.
    pub fn iter(&self) -> &Self {
        self
    }

    /// The device the vector lives on.
    pub fn device(&self) -> &GpuDevice {
        &self.device
    }

    /// The underlying runtime buffer (to pass to a SIMT kernel, say).
    pub fn buffer(&self) -> &DeviceBuffer<T> {
        &self.buffer
    }

    /// The underlying runtime buffer, mutably.
    pub fn buffer_mut(&mut self) -> &mut DeviceBuffer<T> {
        &mut self.buffer
    }

    /// Gives up the wrapper, keeping the buffer.
    pub fn into_buffer(self) -> DeviceBuffer<T> {
        self.buffer
    }

    /// Overwrites the elements with `data` (same length).
    pub fn copy_from_host(&mut self, data: &[T]) -> GpuResult<()> {
        self.buffer.copy_from_host(&self.device.inner.stream, data)
    }
}

/// Turns an internal code-generation failure into an error naming the chain.
pub(crate) fn compile_error(kernel: &str, message: impl Into<String>) -> GpuError {
    Error::Compile {
        kernel: kernel.to_owned(),
        message: message.into(),
    }
}
