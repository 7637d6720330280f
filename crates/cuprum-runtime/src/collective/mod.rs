//! Collectives across devices in NCCL's shape: a [`Communicator`] per device (rank) of a
//! clique, and all-reduce, all-gather, reduce-scatter and broadcast on [`DeviceBuffer`]s,
//! each called once by every rank, in the same order.
//!
//! On GPUs each call goes to NCCL (`ncclCommInitAll`, `ncclAllReduce`, ..., `ncclGroupStart`/
//! `ncclGroupEnd` for [`group`]), loaded at run time through cudarc's bindings: a process
//! without `libnccl` gets [`Error::Unsupported`] from [`Communicator::from_streams`]. Its
//! buffers are ordered on the rank's stream like a launch's.
//!
//! On the emulator this module is the definition, so that multi-device programs run in CI
//! without GPUs (`CUPRUM_EMU_DEVICES=N` devices, one process): an operation completes when its last rank
//! calls it, and that call performs it for every rank, with the arithmetic of
//! `cuprum_ir::scalar` (the kernels' own), reducing in rank order (`((r0 + r1) + r2) ..`;
//! NCCL leaves the order to its algorithms, so results agree with NCCL's exactly only where
//! the order does not matter: integers, and floats whose sums are exact). A rank's call waits
//! for the others, so ranks driven by one thread must be called inside [`group`] (as NCCL
//! requires `ncclGroupStart`/`ncclGroupEnd` there); a rank that waits longer than
//! [`RENDEZVOUS_TIMEOUT`] fails with [`Error::Collective`] naming the ranks it waited for.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use cuprum_ir::scalar::{binary, cast_constant};
use cuprum_ir::{BinaryOp, Constant, ScalarType};

use crate::BackendKind;
use crate::backend::cuda::CudaDevice;
use crate::backend::cuda::nccl::{self, NcclCall, NcclComm};
use crate::backend::{Backend, StreamHandle};
use crate::buffer::{DeviceBuffer, DeviceScalar};
use crate::context::Stream;
use crate::error::{Error, Result};
use crate::host_work::HostRegion;
use crate::ordering::{self, Access, Memory};

mod processes;

pub use processes::UniqueId;

/// How long a rank waits for the other ranks of a collective before it fails.
pub const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(30);

/// NCCL's reduction operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// The sum.
    Sum,
    /// The product.
    Prod,
    /// The largest value (for floats, `max` as the kernels compute it).
    Max,
    /// The smallest value.
    Min,
    /// The sum divided by the number of ranks (integer division for integers).
    Avg,
}

/// What one collective does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    AllReduce(ReduceOp),
    ReduceScatter(ReduceOp),
    AllGather,
    Broadcast { root: usize },
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::AllReduce(_) => "all_reduce",
            Kind::ReduceScatter(_) => "reduce_scatter",
            Kind::AllGather => "all_gather",
            Kind::Broadcast { .. } => "broadcast",
        }
    }
}

/// One rank's part of a collective: its stream, element type and buffers (address, elements).
struct Part {
    stream: Stream,
    elem: ScalarType,
    send: (u64, usize),
    recv: (u64, usize),
    /// The buffers' allocations, kept until the collective is performed: a buffer dropped
    /// inside a [`group`] before its end must not be freed (and its memory reused) first.
    _keep: [Arc<Memory>; 2],
}

/// A collective some ranks have called.
struct Pending {
    kind: Kind,
    parts: Vec<Option<Part>>,
    /// Set once performed: `Ok`, or the failure every rank reports.
    done: Option<std::result::Result<(), String>>,
    /// Ranks that have seen the outcome (the last one forgets the collective).
    seen: usize,
}

/// What the ranks of a clique share.
struct Clique {
    size: usize,
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    /// Per rank, how many collectives it has called.
    calls: Vec<u64>,
    /// By sequence number, the collectives not yet seen by every rank.
    pending: BTreeMap<u64, Pending>,
}

/// How a rank reaches the others.
enum Link {
    /// Emulated devices of this process: the clique's shared state.
    Emulated(Arc<Clique>),
    /// An emulated device in a clique of processes: the rendezvous folder.
    Files(processes::Files),
    /// GPUs: the rank's NCCL communicator.
    Nccl(NcclComm),
}

/// One rank of a clique of devices: collectives on its buffers, ordered on its stream.
pub struct Communicator {
    rank: usize,
    size: usize,
    stream: Stream,
    link: Link,
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish()
    }
}

/// A collective on emulated devices called inside [`group`]: the clique, the rank, the
/// operation and its part.
type Grouped = (Arc<Clique>, usize, Kind, Part);

/// What a [`group`] on this thread has collected.
#[derive(Default)]
struct Group {
    /// Collectives on emulated devices, performed at its end.
    emulated: Vec<Grouped>,
    /// Whether `ncclGroupStart` was called.
    nccl: bool,
    /// NCCL calls' streams and buffers, whose uses are noted once `ncclGroupEnd` enqueued
    /// them.
    enqueued: Vec<(Stream, Uses)>,
}

/// The buffers a collective uses on one rank, and how.
type Uses = Vec<(Arc<Memory>, Access)>;

thread_local! {
    /// The group open on this thread, if any.
    static GROUP: RefCell<Option<Group>> = const { RefCell::new(None) };
}

/// Runs `calls` as one group (NCCL's `ncclGroupStart`/`ncclGroupEnd`): the collectives it
/// makes are submitted together when it returns `Ok`, so one thread may call every rank of
/// a clique; then waits until each is performed. Groups do not nest.
pub fn group<R>(calls: impl FnOnce() -> Result<R>) -> Result<R> {
    GROUP.with_borrow_mut(|g| {
        if g.is_some() {
            return Err(Error::Collective {
                what: "a collective group inside another group".to_owned(),
            });
        }
        *g = Some(Group::default());
        Ok(())
    })?;
    let result = calls();
    let closed = GROUP.with_borrow_mut(Option::take).unwrap_or_default();
    if closed.nccl {
        nccl::group_end().map_err(|what| Error::Collective { what })?;
        for (stream, memory) in &closed.enqueued {
            ordering::hold_memory(stream, memory)?.note_after()?;
        }
    }
    let value = result?;
    let mut waits = Vec::new();
    for (clique, rank, kind, part) in closed.emulated {
        let seq = clique.submit(rank, kind, part)?;
        waits.push((clique, rank, seq));
    }
    for (clique, rank, seq) in waits {
        clique.wait(rank, seq)?;
    }
    Ok(value)
}

impl Communicator {
    /// One communicator per stream, rank `i` on `streams[i]` (NCCL's `ncclCommInitAll`: one
    /// process driving every device of the clique). Each stream must be of another context.
    pub fn from_streams(streams: &[Stream]) -> Result<Vec<Communicator>> {
        if streams.is_empty() {
            return Err(Error::Collective {
                what: "a clique needs at least one stream".to_owned(),
            });
        }
        for (i, s) in streams.iter().enumerate() {
            if streams[..i].iter().any(|t| {
                t.context().same_context(s.context())
                    || (s.context().backend() == BackendKind::Cuda
                        && t.context().backend() == BackendKind::Cuda
                        && t.context().ordinal() == s.context().ordinal())
            }) {
                return Err(Error::Collective {
                    what: format!(
                        "rank {i} is on the device of an earlier rank: one rank per device"
                    ),
                });
            }
        }
        let size = streams.len();
        let kinds: Vec<BackendKind> = streams.iter().map(|s| s.context().backend()).collect();
        if kinds.iter().all(|&k| k == BackendKind::Emulator) {
            let clique = Arc::new(Clique {
                size,
                state: Mutex::new(State {
                    calls: vec![0; size],
                    pending: BTreeMap::new(),
                }),
                ready: Condvar::new(),
            });
            return Ok(streams
                .iter()
                .enumerate()
                .map(|(rank, s)| Communicator {
                    rank,
                    size,
                    stream: s.clone(),
                    link: Link::Emulated(clique.clone()),
                })
                .collect());
        }
        let devices: Vec<&CudaDevice> = streams
            .iter()
            .filter_map(|s| match &s.context().inner.backend {
                Backend::Cuda(d) => Some(d),
                Backend::Emu(_) => None,
            })
            .collect();
        if devices.len() != size {
            return Err(Error::Unsupported {
                what: "a clique of GPUs and emulated devices".to_owned(),
            });
        }
        if !nccl::available() {
            return Err(processes::nccl_missing());
        }
        let comms = nccl::init_all(&devices).map_err(|what| Error::Collective { what })?;
        Ok(streams
            .iter()
            .zip(comms)
            .enumerate()
            .map(|(rank, (s, comm))| Communicator {
                rank,
                size,
                stream: s.clone(),
                link: Link::Nccl(comm),
            })
            .collect())
    }

    /// This communicator's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks the clique has.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The stream the rank's collectives are ordered on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// `recv = send(rank 0) op send(rank 1) op ..`, element by element, on every rank;
    /// `send` and `recv` of the same length on every rank.
    pub fn all_reduce<T: DeviceScalar>(
        &self,
        send: &DeviceBuffer<T>,
        recv: &mut DeviceBuffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.call(Kind::AllReduce(op), T::TYPE, send, recv)
    }

    /// Rank `r`'s `recv` is part `r` (of `recv.len()` elements) of the all-reduce of the
    /// ranks' `send`s, each `size()` times as long as `recv`.
    pub fn reduce_scatter<T: DeviceScalar>(
        &self,
        send: &DeviceBuffer<T>,
        recv: &mut DeviceBuffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.call(Kind::ReduceScatter(op), T::TYPE, send, recv)
    }

    /// Every rank's `recv` is the ranks' `send`s one after another, in rank order (`recv`
    /// `size()` times as long as `send`).
    pub fn all_gather<T: DeviceScalar>(
        &self,
        send: &DeviceBuffer<T>,
        recv: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.call(Kind::AllGather, T::TYPE, send, recv)
    }

    /// Every rank's `buffer` becomes rank `root`'s (of the same length on every rank).
    pub fn broadcast<T: DeviceScalar>(
        &self,
        buffer: &mut DeviceBuffer<T>,
        root: usize,
    ) -> Result<()> {
        if root >= self.size() {
            return Err(Error::Collective {
                what: format!("broadcast from rank {root} of a clique of {}", self.size()),
            });
        }
        self.call(Kind::Broadcast { root }, T::TYPE, buffer, buffer)
    }

    fn call<T: DeviceScalar>(
        &self,
        kind: Kind,
        elem: ScalarType,
        send: &DeviceBuffer<T>,
        recv: &DeviceBuffer<T>,
    ) -> Result<()> {
        if matches!(kind, Kind::AllReduce(_) | Kind::ReduceScatter(_)) && !reduces(elem) {
            return Err(Error::Collective {
                what: format!(
                    "{} of `{elem}` elements: collectives reduce i8, u8, i32, u32, i64, u64, \
                     f16, bf16, f32 and f64 (NCCL's types); gathers and broadcasts move any",
                    kind.name()
                ),
            });
        }
        let part = self.part(elem, send, recv)?;
        match &self.link {
            Link::Emulated(_) => self.submit_or_group(kind, part),
            Link::Files(files) => files.call(self, kind, part.elem, part.send, part.recv),
            Link::Nccl(comm) => self.enqueue_nccl(comm, kind, part, send, recv),
        }
    }

    /// Checks one rank's lengths for `kind` on NCCL (the emulator checks them across ranks).
    fn nccl_call(&self, kind: Kind, part: &Part) -> Result<NcclCall> {
        let (send, recv, n) = (part.send.1, part.recv.1, self.size);
        let bad = |what: &str| {
            Err(Error::Collective {
                what: format!("{} {what} (sends {send}, receives {recv})", kind.name()),
            })
        };
        Ok(match kind {
            Kind::AllReduce(op) if send == recv => NcclCall::AllReduce { op, count: send },
            Kind::ReduceScatter(op) if send == recv * n => NcclCall::ReduceScatter {
                op,
                recv_count: recv,
            },
            Kind::AllGather if recv == send * n => NcclCall::AllGather { send_count: send },
            Kind::Broadcast { root } => NcclCall::Broadcast { root, count: send },
            Kind::AllReduce(_) => return bad("needs buffers of one length"),
            Kind::ReduceScatter(_) => return bad("needs a send buffer size() times the receive"),
            Kind::AllGather => return bad("needs a receive buffer size() times the send"),
        })
    }

    /// Enqueues a collective on NCCL, its buffers ordered on the rank's stream (their uses
    /// noted now, or at the end of the open [`group`], when NCCL enqueues its work).
    fn enqueue_nccl<T: DeviceScalar>(
        &self,
        comm: &NcclComm,
        kind: Kind,
        part: Part,
        send: &DeviceBuffer<T>,
        recv: &DeviceBuffer<T>,
    ) -> Result<()> {
        let call = self.nccl_call(kind, &part)?;
        let (Backend::Cuda(device), StreamHandle::Cuda(raw)) =
            (&self.stream.context().inner.backend, self.stream.handle())
        else {
            return Err(Error::Unsupported {
                what: "NCCL on a stream that is not a GPU's (or records a graph)".to_owned(),
            });
        };
        let memory = vec![
            (send.memory.clone(), Access::Read),
            (recv.memory.clone(), Access::Write),
        ];
        let grouped = GROUP.with_borrow_mut(|g| match g {
            Some(group) => {
                if !group.nccl {
                    nccl::group_start().map_err(|what| Error::Collective { what })?;
                    group.nccl = true;
                }
                Ok::<bool, Error>(true)
            }
            None => Ok(false),
        })?;
        let held = ordering::hold_memory(&self.stream, &memory)?;
        // SAFETY: both buffers are live allocations of this rank's device (checked by
        // `part`), of the lengths `nccl_call` checked, held for this use on the stream.
        unsafe { nccl::enqueue(comm, device, raw, part.elem, call, part.send.0, part.recv.0) }
            .map_err(|what| Error::Collective { what })?;
        if grouped {
            drop(held);
            GROUP.with_borrow_mut(|g| {
                if let Some(group) = g {
                    group.enqueued.push((self.stream.clone(), memory));
                }
            });
            Ok(())
        } else {
            held.note_after()
        }
    }

    /// This rank's part, its buffers checked to be of its context.
    fn part<T: DeviceScalar>(
        &self,
        elem: ScalarType,
        send: &DeviceBuffer<T>,
        recv: &DeviceBuffer<T>,
    ) -> Result<Part> {
        let ctx = self.stream.context();
        if !send.context().same_context(ctx) || !recv.context().same_context(ctx) {
            return Err(Error::ContextMismatch);
        }
        Ok(Part {
            stream: self.stream.clone(),
            elem,
            send: (send.device_address(), send.len()),
            recv: (recv.device_address(), recv.len()),
            _keep: [send.memory.clone(), recv.memory.clone()],
        })
    }

    fn submit_or_group(&self, kind: Kind, part: Part) -> Result<()> {
        let Link::Emulated(clique) = &self.link else {
            return Ok(());
        };
        let grouped = GROUP.with_borrow_mut(|g| match g {
            Some(group) => {
                group.emulated.push((clique.clone(), self.rank, kind, part));
                None
            }
            None => Some(part),
        });
        let Some(part) = grouped else {
            return Ok(());
        };
        let seq = clique.submit(self.rank, kind, part)?;
        clique.wait(self.rank, seq)
    }
}

impl Clique {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `rank`'s part to its next collective, performing it when it is the last.
    fn submit(&self, rank: usize, kind: Kind, part: Part) -> Result<u64> {
        let mut state = self.lock();
        let seq = state.calls[rank];
        state.calls[rank] += 1;
        let size = self.size;
        let pending = state.pending.entry(seq).or_insert_with(|| Pending {
            kind,
            parts: (0..size).map(|_| None).collect(),
            done: None,
            seen: 0,
        });
        if pending.kind != kind {
            let what = format!(
                "collective {seq} is {} on an earlier rank but {} on rank {rank}",
                pending.kind.name(),
                kind.name()
            );
            pending.done = Some(Err(what.clone()));
            self.ready.notify_all();
            return Err(Error::Collective { what });
        }
        pending.parts[rank] = Some(part);
        if pending.parts.iter().all(Option::is_some) && pending.done.is_none() {
            let parts: Vec<&Part> = pending.parts.iter().flatten().collect();
            let outcome = perform(kind, &parts);
            pending.done = Some(outcome.map_err(|e| e.to_string()));
            self.ready.notify_all();
        }
        Ok(seq)
    }

    /// Waits until collective `seq` is performed; its failure is every rank's.
    fn wait(&self, rank: usize, seq: u64) -> Result<()> {
        let mut state = self.lock();
        loop {
            let Some(pending) = state.pending.get(&seq) else {
                return Ok(());
            };
            if let Some(done) = pending.done.clone() {
                if let Some(p) = state.pending.get_mut(&seq) {
                    p.seen += 1;
                    if p.seen == self.size {
                        state.pending.remove(&seq);
                    }
                }
                return done.map_err(|what| Error::Collective { what });
            }
            let (next, timeout) = self
                .ready
                .wait_timeout(state, RENDEZVOUS_TIMEOUT)
                .unwrap_or_else(|e| e.into_inner());
            state = next;
            if timeout.timed_out() {
                let missing: Vec<usize> = state
                    .pending
                    .get(&seq)
                    .map(|p| (0..self.size).filter(|&r| p.parts[r].is_none()).collect())
                    .unwrap_or_default();
                let kind = state
                    .pending
                    .get(&seq)
                    .map_or("a collective", |p| p.kind.name());
                return Err(Error::Collective {
                    what: format!(
                        "rank {rank} waited {} s for ranks {missing:?} to call {kind}: one \
                         thread driving several ranks must call them inside \
                         `collective::group`",
                        RENDEZVOUS_TIMEOUT.as_secs()
                    ),
                });
            }
        }
    }
}

/// Reads `len` elements of `elem` at `address` through `stream` (its bits, little-endian).
fn read(stream: &Stream, elem: ScalarType, address: u64, len: usize) -> Result<Vec<u64>> {
    let size = elem.size_bytes() as usize;
    let region = HostRegion {
        address,
        bytes: (len * size) as u64,
        write: false,
    };
    // SAFETY: nothing is written.
    unsafe {
        stream.run_on_host(&[region], |copies| -> Result<Vec<u64>> {
            Ok(copies[0]
                .chunks_exact(size)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b[..size].copy_from_slice(c);
                    u64::from_le_bytes(b)
                })
                .collect())
        })
    }
}

/// Writes `values` (bits of `elem`) at `address` through `stream`.
fn write(stream: &Stream, elem: ScalarType, address: u64, values: &[u64]) -> Result<()> {
    let size = elem.size_bytes() as usize;
    let region = HostRegion {
        address,
        bytes: (values.len() * size) as u64,
        write: true,
    };
    // SAFETY: the region is the rank's receive buffer, which the collective's caller holds
    // mutably (`&mut DeviceBuffer`) until the collective is performed.
    unsafe {
        stream.run_on_host(&[region], |copies| -> Result<()> {
            for (c, v) in copies[0].chunks_exact_mut(size).zip(values) {
                c.copy_from_slice(&v.to_le_bytes()[..size]);
            }
            Ok(())
        })
    }
}

/// Whether collectives reduce elements of `elem`: NCCL's reduction types, on every backend
/// (the emulator could add `i16`s, but a program it passes would then fail on GPUs).
/// Gathers and broadcasts move elements of every type.
pub(crate) const fn reduces(elem: ScalarType) -> bool {
    use ScalarType as S;
    matches!(
        elem,
        S::I8 | S::U8 | S::I32 | S::U32 | S::I64 | S::U64 | S::F16 | S::BF16 | S::F32 | S::F64
    )
}

/// `acc = acc op x`, element by element, with the kernels' arithmetic.
fn combine(op: ReduceOp, elem: ScalarType, acc: &mut [u64], x: &[u64]) -> Result<()> {
    let bop = match op {
        ReduceOp::Sum | ReduceOp::Avg => BinaryOp::Add,
        ReduceOp::Prod => BinaryOp::Mul,
        ReduceOp::Max => BinaryOp::Max,
        ReduceOp::Min => BinaryOp::Min,
    };
    for (a, &b) in acc.iter_mut().zip(x) {
        let mut out = [0u64];
        binary::<1>(bop, elem, &[*a], &[b], &mut out, 1).map_err(|_| Error::Collective {
            what: format!("{op:?} of `{elem}` elements is not defined"),
        })?;
        *a = out[0];
    }
    Ok(())
}

/// Checks what every rank gave collective `kind`: `(element type, send length, receive
/// length)` per rank, in rank order (the one definition of what the ranks must agree on).
fn check_shapes(kind: Kind, shapes: &[(ScalarType, usize, usize)]) -> Result<()> {
    let (elem, send_len, _) = shapes[0];
    let n = shapes.len();
    if let Some((other, _, _)) = shapes.iter().find(|s| s.0 != elem) {
        return Err(Error::Collective {
            what: format!(
                "{} of `{elem}` on rank 0 but `{other}` on another rank",
                kind.name()
            ),
        });
    }
    let fits = |&(_, send, recv): &(ScalarType, usize, usize)| match kind {
        Kind::AllReduce(_) => send == send_len && recv == send_len,
        Kind::ReduceScatter(_) => send == send_len && recv * n == send_len,
        Kind::AllGather => send == send_len && recv == send_len * n,
        Kind::Broadcast { .. } => send == send_len,
    };
    if shapes.iter().all(fits) {
        return Ok(());
    }
    let rule = match kind {
        Kind::AllReduce(_) => "send and receive buffers of one length on every rank",
        Kind::ReduceScatter(_) => "sends of one length, size() times each receive buffer's",
        Kind::AllGather => "sends of one length and receive buffers size() times as long",
        Kind::Broadcast { .. } => "buffers of one length on every rank",
    };
    Err(Error::Collective {
        what: format!("{} needs {rule} (rank 0 sends {send_len})", kind.name()),
    })
}

/// What rank `rank` receives from collective `kind`, given every rank's sent values (checked
/// by [`check_shapes`]); `None` where it receives nothing (a broadcast's root).
fn received(
    kind: Kind,
    elem: ScalarType,
    sends: &[Vec<u64>],
    rank: usize,
) -> Result<Option<Vec<u64>>> {
    let n = sends.len();
    let reduce = |op: ReduceOp, range: std::ops::Range<usize>| -> Result<Vec<u64>> {
        let mut acc = sends[0][range.clone()].to_vec();
        for s in &sends[1..] {
            combine(op, elem, &mut acc, &s[range.clone()])?;
        }
        if op == ReduceOp::Avg {
            let count = cast_constant(Constant::u64(n as u64), elem).bits;
            for a in &mut acc {
                let mut out = [0u64];
                binary::<1>(BinaryOp::Div, elem, &[*a], &[count], &mut out, 1).map_err(|_| {
                    Error::Collective {
                        what: format!("Avg of `{elem}` elements is not defined"),
                    }
                })?;
                *a = out[0];
            }
        }
        Ok(acc)
    };
    let len = sends[0].len();
    Ok(match kind {
        Kind::AllReduce(op) => Some(reduce(op, 0..len)?),
        Kind::ReduceScatter(op) => {
            let part = len / n;
            Some(reduce(op, rank * part..(rank + 1) * part)?)
        }
        Kind::AllGather => Some(sends.concat()),
        Kind::Broadcast { root } => (rank != root).then(|| sends[root].clone()),
    })
}

/// Performs collective `kind` with every rank's part (in rank order).
fn perform(kind: Kind, parts: &[&Part]) -> Result<()> {
    let shapes: Vec<_> = parts.iter().map(|p| (p.elem, p.send.1, p.recv.1)).collect();
    check_shapes(kind, &shapes)?;
    let elem = parts[0].elem;
    let sends = parts
        .iter()
        .map(|p| read(&p.stream, elem, p.send.0, p.send.1))
        .collect::<Result<Vec<_>>>()?;
    for (rank, p) in parts.iter().enumerate() {
        if let Some(values) = received(kind, elem, &sends, rank)? {
            write(&p.stream, elem, p.recv.0, &values)?;
        }
    }
    Ok(())
}
