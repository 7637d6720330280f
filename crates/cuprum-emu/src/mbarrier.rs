//! mbarriers: the block's asynchronous transaction barriers, as PTX defines them, and the
//! order their phases give shared-memory accesses for race detection.
//!
//! A barrier object lives at an 8-byte aligned offset of the block's shared memory; its state
//! (expected count, pending arrivals, tx-count, phase) is kept here by offset rather than in
//! the bytes, because the object is opaque to programs. What each operation does is the IR's
//! definition ([`cuprum_ir::Stmt::Mbarrier`]); misuse is a typed fault ([`MbarFault`]) the warp
//! turns into an [`EmuError`](crate::EmuError).
//!
//! # Ordering (race detection)
//!
//! The shared-memory race tracker orders accesses of different threads by barrier epochs
//! (`bar.sync`). An mbarrier orders less: the accesses a thread made before its arrival on a
//! phase happen before the accesses another thread makes after observing that phase's
//! completion (a blocking wait, or a test that returned true), and, transitively, what the
//! arriving threads had themselves acquired. This is a vector clock, [`Clocks`]:
//! * every thread has a *stamp*; each of its accesses is recorded with it. An arrival
//!   publishes the thread's stamp (its accesses so far) and gives the thread a fresh, larger
//!   one, so its later accesses are not covered;
//! * a phase collects, per thread, the newest stamp any arrival on it published, joined with
//!   what each arriving thread knew; observing the phase's completion joins that into the
//!   observer's row of the clock matrix (`known[observer][thread]`);
//! * an earlier access by thread `w` with stamp `s` is ordered before thread `t`'s access when
//!   `known[t][w] >= s` (or the epochs differ, or `w == t`: the tracker's old rules).
//!
//! Stamps come from one counter that only grows; a new block's threads all start at a fresh
//! `base`, so clock entries left from earlier blocks are smaller than any stamp of the block
//! and order nothing, and nothing is cleared per block. A token older than the phase just
//! completed acquires the join of every completed phase (over-approximate: it can hide a race,
//! never invent one). `cp.async.mbarrier.arrive` releases the thread's accesses when it
//! executes, its copies included (they complete at once on the emulator).
//!
//! A remote arrival ([`MbarrierOp::ArriveCluster`], from another block of the cluster) joins
//! into the phase what its thread knew of this block's threads (in these clocks) and, beside
//! them, a [`Knowledge`] of the other blocks' accesses, which the phase's observers acquire
//! ([`crate::cluster`]).

use std::collections::HashMap;

use cuprum_ir::{MbarrierOp, Value};

use crate::access::{Ctx, lanes_of};
use crate::cluster::Knowledge;
use crate::error::EmuError;
use crate::warp::Exec;

/// Largest expected count and tx-count of a phase (PTX: `2^20 - 1`).
pub(crate) const MAX_COUNT: u32 = (1 << 20) - 1;

/// The vector clocks of one block's threads (see the module docs).
pub(crate) struct Clocks {
    /// The last stamp handed out.
    next: u32,
    /// The stamp every thread of the current block starts with.
    base: u32,
    /// Per thread: its stamp, where larger than `base`.
    stamps: Vec<u32>,
    threads: usize,
    /// `threads * threads` once the block first synchronises through an mbarrier (else
    /// empty): row `t` holds, per thread `w`, the newest stamp of `w` that `t` acquired.
    known: Vec<u32>,
}

impl Clocks {
    fn new() -> Self {
        Self {
            next: 1,
            base: 1,
            stamps: Vec::new(),
            threads: 0,
            known: Vec::new(),
        }
    }

    /// Starts a block of `threads` threads. Returns false when the counter had to start over
    /// (then the caller must forget every recorded stamp: see [`Clocks::fresh`]).
    fn begin_block(&mut self, threads: u32) -> bool {
        let threads = threads as usize;
        if self.stamps.len() < threads {
            self.stamps.resize(threads, 0);
        }
        if self.threads != threads {
            self.known.clear();
            self.threads = threads;
        }
        let ok = self.fresh_checked();
        self.base = self.next;
        ok
    }

    /// A new stamp, larger than every earlier one; false when the counter wrapped and
    /// everything was reset (stamps, clock matrix) so it could start over.
    fn fresh_checked(&mut self) -> bool {
        if self.next == u32::MAX {
            self.stamps.fill(0);
            self.known.fill(0);
            self.next = 1;
            self.base = 1;
            return false;
        }
        self.next += 1;
        true
    }

    /// Thread `t`'s current stamp: what its accesses are recorded with.
    #[inline]
    pub(crate) fn stamp(&self, t: u32) -> u32 {
        self.stamps
            .get(t as usize)
            .map_or(self.base, |&s| s.max(self.base))
    }

    /// Whether thread `w`'s access recorded with `stamp` happens before thread `t`'s
    /// accesses from now on, through mbarrier phases.
    #[inline]
    pub(crate) fn ordered(&self, w: u32, stamp: u32, t: u32) -> bool {
        !self.known.is_empty()
            && self
                .known
                .get(t as usize * self.threads + w as usize)
                .is_some_and(|&k| k >= stamp)
    }

    fn ensure_known(&mut self) {
        if self.known.is_empty() {
            self.known = vec![0; self.threads * self.threads];
        }
    }

    /// Thread `t` releases its accesses so far into `into` (a phase's collection): `into`
    /// joins what `t` knows and `t`'s stamp, and `t` moves on to a fresh stamp. Returns false
    /// when the counter started over (see [`Clocks::begin_block`]).
    pub(crate) fn release(&mut self, t: u32, into: &mut Vec<u32>) -> bool {
        self.ensure_known();
        let n = self.threads;
        let t = t as usize;
        if into.len() != n {
            *into = vec![0; n];
        }
        for (d, &k) in into.iter_mut().zip(&self.known[t * n..(t + 1) * n]) {
            *d = (*d).max(k);
        }
        let published = self.stamp(t as u32);
        if let Some(d) = into.get_mut(t) {
            *d = (*d).max(published);
        }
        let ok = self.fresh_checked();
        if let Some(s) = self.stamps.get_mut(t) {
            *s = self.next;
        }
        ok
    }

    /// Thread `t` acquires one entry of a collection: thread `w`'s accesses up to `stamp`.
    pub(crate) fn acquire_one(&mut self, t: u32, w: u32, stamp: u32) {
        self.ensure_known();
        let n = self.threads;
        if let Some(k) = self.known.get_mut(t as usize * n + w as usize)
            && (w as usize) < n
        {
            *k = (*k).max(stamp);
        }
    }

    /// Thread `t` knows exactly `from` from now on (zeros past its end): the tensor memory
    /// accelerator's knowledge while it performs one copy is its issuer's at the issue, not
    /// what earlier copies' issuers knew.
    pub(crate) fn assume(&mut self, t: u32, from: &[u32]) {
        self.ensure_known();
        let n = self.threads;
        let t = t as usize;
        if let Some(row) = self.known.get_mut(t * n..(t + 1) * n) {
            for (i, d) in row.iter_mut().enumerate() {
                *d = from.get(i).copied().unwrap_or(0);
            }
        }
    }

    /// Thread `t` acquires a phase's collection `from`.
    pub(crate) fn acquire(&mut self, t: u32, from: &[u32]) {
        if from.is_empty() {
            return;
        }
        self.ensure_known();
        let n = self.threads;
        let t = t as usize;
        for (d, &k) in self.known[t * n..(t + 1) * n].iter_mut().zip(from) {
            *d = (*d).max(k);
        }
    }
}

/// One barrier object.
struct Object {
    /// False once invalidated.
    live: bool,
    expected: u32,
    pending: u32,
    /// The tx-count: bytes expected less bytes completed (negative while copies complete
    /// before their `expect_tx`, as PTX allows).
    tx: i64,
    phase: u32,
    /// The initialising thread, its stamp and the shared-memory epoch then: a use by another
    /// thread must be ordered after the initialisation.
    init: (u32, u32, u32),
    /// What the current phase's arrivals released (see [`Clocks::release`]).
    arrived: Vec<u32>,
    /// What the last completed phase's arrivals released.
    last: Vec<u32>,
    /// What every completed phase's arrivals released.
    all: Vec<u32>,
    /// What the current phase's remote arrivals released of other blocks' accesses (`None`
    /// until one arrives), the last completed phase's, and every completed phase's.
    remote: Option<Box<Knowledge>>,
    remote_last: Option<Box<Knowledge>>,
    remote_all: Option<Box<Knowledge>>,
    /// Phases completed at this offset, counted across initialisations.
    completions: u64,
    /// `completions` when a thread of the block last observed a completion.
    observed: u64,
}

/// A misuse of an mbarrier; the warp adds kernel, block and thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MbarFault {
    /// The object does not lie inside the block's shared memory.
    OutOfBounds,
    /// The address is not a multiple of 8.
    Misaligned,
    /// No `init` set this barrier up.
    Uninitialized,
    /// The barrier was invalidated and not initialised again.
    Invalidated,
    /// `init` of a barrier that is live.
    AlreadyLive,
    /// An expected count outside `1..=MAX_COUNT`.
    Count(u64),
    /// The tx-count would leave `-MAX_COUNT..=MAX_COUNT`.
    TxCount(i64),
    /// A token that another barrier (or no arrival) made.
    ForeignToken(u64),
    /// A use by a thread that nothing orders after the initialisation by `init_thread`.
    UnorderedInit { init_thread: u32 },
}

/// What a wait or test asks about: the phase of a token, or the phase of a parity.
#[derive(Clone, Copy)]
pub(crate) enum Probe {
    Token(u64),
    Parity(u64),
}

/// The block's mbarrier objects by shared offset, and the clocks of their ordering.
pub(crate) struct Mbarriers {
    objects: HashMap<u32, Object>,
    pub(crate) clocks: Clocks,
}

impl Mbarriers {
    pub(crate) fn new() -> Self {
        Self {
            objects: HashMap::new(),
            clocks: Clocks::new(),
        }
    }

    /// Starts a block: no barrier is live. False when the clocks started over (the caller
    /// must then forget the stamps of recorded accesses).
    pub(crate) fn begin_block(&mut self, threads: u32) -> bool {
        self.objects.clear();
        self.clocks.begin_block(threads)
    }

    /// The live object at `off`, after the checks every use makes.
    fn live(&mut self, off: u32, thread: u32, epoch: u32) -> Result<&mut Object, MbarFault> {
        let clocks = &self.clocks;
        let o = self.objects.get_mut(&off).ok_or(MbarFault::Uninitialized)?;
        if !o.live {
            return Err(MbarFault::Invalidated);
        }
        let (by, stamp, at) = o.init;
        if by != thread && at == epoch && !clocks.ordered(by, stamp, thread) {
            return Err(MbarFault::UnorderedInit { init_thread: by });
        }
        Ok(o)
    }

    /// `mbarrier.init` by `thread` in shared-memory epoch `epoch`.
    pub(crate) fn init(
        &mut self,
        off: u32,
        count: u64,
        thread: u32,
        epoch: u32,
    ) -> Result<(), MbarFault> {
        if self.objects.get(&off).is_some_and(|o| o.live) {
            return Err(MbarFault::AlreadyLive);
        }
        let expected = u32::try_from(count)
            .ok()
            .filter(|c| (1..=MAX_COUNT).contains(c))
            .ok_or(MbarFault::Count(count))?;
        let stamp = self.clocks.stamp(thread);
        let (completions, observed) = self
            .objects
            .get(&off)
            .map_or((0, 0), |o| (o.completions, o.observed));
        self.objects.insert(
            off,
            Object {
                live: true,
                expected,
                pending: expected,
                tx: 0,
                phase: 0,
                init: (thread, stamp, epoch),
                arrived: Vec::new(),
                last: Vec::new(),
                all: Vec::new(),
                remote: None,
                remote_last: None,
                remote_all: None,
                completions,
                observed,
            },
        );
        Ok(())
    }

    /// `mbarrier.inval`.
    pub(crate) fn inval(&mut self, off: u32, thread: u32, epoch: u32) -> Result<(), MbarFault> {
        self.live(off, thread, epoch)?.live = false;
        Ok(())
    }

    /// Adds `bytes` to the current phase's tx-count.
    pub(crate) fn expect_tx(
        &mut self,
        off: u32,
        bytes: u64,
        thread: u32,
        epoch: u32,
    ) -> Result<(), MbarFault> {
        let o = self.live(off, thread, epoch)?;
        let tx = o.tx + i64::try_from(bytes).unwrap_or(i64::MAX / 2);
        if tx > i64::from(MAX_COUNT) {
            return Err(MbarFault::TxCount(tx));
        }
        o.tx = tx;
        Ok(())
    }

    /// A complete-tx of `bytes` by the tensor memory accelerator (thread `agent`): the
    /// current phase's tx-count drops by that much and the agent releases its writes into
    /// the phase, which completes when nothing is pending. False beside it when the clocks
    /// started over.
    pub(crate) fn complete_tx(
        &mut self,
        off: u32,
        bytes: u64,
        agent: u32,
        epoch: u32,
    ) -> Result<bool, MbarFault> {
        self.live(off, agent, epoch)?;
        let Self { objects, clocks } = self;
        let o = objects.get_mut(&off).ok_or(MbarFault::Uninitialized)?;
        let tx = o.tx - i64::try_from(bytes).unwrap_or(i64::MAX / 2);
        if tx < -i64::from(MAX_COUNT) {
            return Err(MbarFault::TxCount(tx));
        }
        let ok = clocks.release(agent, &mut o.arrived);
        o.tx = tx;
        complete_if_done(o);
        Ok(ok)
    }

    /// An arrival by `thread` (`counted`: it counts toward the phase; a `cp.async` arrival
    /// without `.noinc` does not). Returns the token of the phase it arrived on, and false
    /// beside it when the clocks started over.
    pub(crate) fn arrive(
        &mut self,
        off: u32,
        thread: u32,
        epoch: u32,
        counted: bool,
    ) -> Result<(u64, bool), MbarFault> {
        self.live(off, thread, epoch)?;
        let Self { objects, clocks } = self;
        let o = objects.get_mut(&off).ok_or(MbarFault::Uninitialized)?;
        let ok = clocks.release(thread, &mut o.arrived);
        let token = token(off, o.phase);
        if counted {
            o.pending = o.pending.saturating_sub(1);
            complete_if_done(o);
        }
        Ok((token, ok))
    }

    /// A counted arrival from another block of the cluster: `known` is what its thread knew
    /// of this block's threads (these clocks' stamps), which must order the initialisation
    /// before it and joins the phase's collection; `released` is what it knew of the other
    /// blocks. Returns how many phases had completed at `off` before the arrival's.
    pub(crate) fn arrive_remote(
        &mut self,
        off: u32,
        known: &[u32],
        released: Knowledge,
    ) -> Result<u64, MbarFault> {
        let n = self.clocks.threads;
        let o = self.objects.get_mut(&off).ok_or(MbarFault::Uninitialized)?;
        if !o.live {
            return Err(MbarFault::Invalidated);
        }
        let (by, stamp, _) = o.init;
        if known.get(by as usize).is_none_or(|&k| k < stamp) {
            return Err(MbarFault::UnorderedInit { init_thread: by });
        }
        if o.arrived.len() != n {
            o.arrived = vec![0; n];
        }
        for (d, &k) in o.arrived.iter_mut().zip(known) {
            *d = (*d).max(k);
        }
        match &mut o.remote {
            Some(r) => r.join(&released),
            None => o.remote = Some(Box::new(released)),
        }
        let before = o.completions;
        o.pending = o.pending.saturating_sub(1);
        complete_if_done(o);
        Ok(before)
    }

    /// What remote arrivals released into the phase `probe` names, for an observer of its
    /// completion (`None` when no remote arrival came).
    pub(crate) fn remote_release(&self, off: u32, probe: Probe) -> Option<Knowledge> {
        let o = self.objects.get(&off)?;
        let latest = match probe {
            Probe::Token(t) => o.phase.wrapping_sub(t as u32) == 1,
            Probe::Parity(_) => true,
        };
        let k = if latest {
            &o.remote_last
        } else {
            &o.remote_all
        };
        k.as_deref().cloned()
    }

    /// How many phases at `off` had completed when a thread of the block last observed a
    /// completion there.
    pub(crate) fn observed(&self, off: u32) -> u64 {
        self.objects.get(&off).map_or(0, |o| o.observed)
    }

    /// Whether the phase `probe` names has completed.
    pub(crate) fn test(
        &mut self,
        off: u32,
        probe: Probe,
        thread: u32,
        epoch: u32,
    ) -> Result<bool, MbarFault> {
        let o = self.live(off, thread, epoch)?;
        Ok(match probe {
            Probe::Token(t) => {
                if t >> 32 != u64::from(off) + 1 {
                    return Err(MbarFault::ForeignToken(t));
                }
                (o.phase.wrapping_sub(t as u32) as i32) > 0
            }
            Probe::Parity(p) => u64::from(o.phase & 1) != p & 1,
        })
    }

    /// `thread` observed the completion of the phase `probe` names: it acquires what that
    /// phase's arrivals released (for a token older than the last completed phase, what
    /// every completed phase's did).
    pub(crate) fn acquire(&mut self, off: u32, probe: Probe, thread: u32) {
        let Some(o) = self.objects.get_mut(&off) else {
            return;
        };
        o.observed = o.completions;
        let latest = match probe {
            Probe::Token(t) => o.phase.wrapping_sub(t as u32) == 1,
            Probe::Parity(_) => true,
        };
        let from = if latest { &o.last } else { &o.all };
        self.clocks.acquire(thread, from);
    }

    /// The state of the barrier at `off`, for a deadlock report.
    pub(crate) fn describe(&self, off: u32) -> String {
        match self.objects.get(&off) {
            Some(o) if o.live => format!(
                "the mbarrier at shared offset {off} is in phase {} with {} of its {} \
                 arrivals and {} transaction bytes pending",
                o.phase, o.pending, o.expected, o.tx
            ),
            Some(_) => format!("the mbarrier at shared offset {off} is invalidated"),
            None => format!("no mbarrier is initialised at shared offset {off}"),
        }
    }
}

/// Completes the current phase of `o` when no arrival and no transaction byte is pending.
fn complete_if_done(o: &mut Object) {
    if o.pending == 0 && o.tx == 0 {
        o.phase = o.phase.wrapping_add(1);
        o.pending = o.expected;
        let n = o.arrived.len();
        if o.all.len() != n {
            o.all = vec![0; n];
        }
        for (a, &x) in o.all.iter_mut().zip(&o.arrived) {
            *a = (*a).max(x);
        }
        std::mem::swap(&mut o.last, &mut o.arrived);
        o.arrived.fill(0);
        o.completions += 1;
        if let Some(r) = &o.remote {
            match &mut o.remote_all {
                Some(all) => all.join(r),
                None => o.remote_all = Some(r.clone()),
            }
        }
        o.remote_last = o.remote.take();
    }
}

/// What the warp does after an mbarrier statement.
pub(crate) enum Flow {
    /// Goes on with the next statement.
    Next,
    /// Lets the other warps run first (a test found its phase incomplete).
    Yield,
    /// Waits: lane `lane`'s phase of the barrier at `off` has not completed.
    Block { off: u32, lane: u32 },
}

impl Exec<'_, '_> {
    /// Runs an mbarrier statement for the lanes in `mask`, lane by lane in lane order (so
    /// arrivals of one warp complete a phase at the lane that brings the count to zero).
    pub(crate) fn mbarrier(
        &mut self,
        op: MbarrierOp,
        addr: Value,
        arg: Option<Value>,
        result: Option<Value>,
        mask: u32,
    ) -> Result<Flow, EmuError> {
        let ctx = self.ctx;
        if let MbarrierOp::CpAsyncArrive { .. } = op {
            // The arrive fires once the lanes' earlier copies are complete: they land first.
            self.land_copies(mask, None)?;
        }
        let addrs = self.regs[addr.index()];
        let args = arg.map_or([0; 32], |a| self.regs[a.index()]);
        if op == MbarrierOp::ArriveCluster {
            self.arrive_cluster(&addrs, &args, mask)?;
            return Ok(Flow::Next);
        }
        let tests = matches!(
            op,
            MbarrierOp::Wait
                | MbarrierOp::WaitParity
                | MbarrierOp::TestWait
                | MbarrierOp::TryWait
                | MbarrierOp::TryWaitParity
        );
        if tests && !self.mem.shared.tma.loads.is_empty() {
            // The latest legal point for the TMA's bytes to land: a test of their barrier
            // that would otherwise find the phase incomplete.
            for l in lanes_of(mask) {
                let a = addrs[l as usize];
                let epoch = self.mem.shared.epoch();
                let Ok(off) = self.mem.shared.mbarrier_at(a) else {
                    continue;
                };
                let probe = match op {
                    MbarrierOp::WaitParity | MbarrierOp::TryWaitParity => {
                        Probe::Parity(args[l as usize])
                    }
                    _ => Probe::Token(args[l as usize]),
                };
                let done = self.mem.shared.mbar.test(off, probe, ctx.tid(l), epoch);
                if done == Ok(false) {
                    self.land_loads(off)?;
                }
            }
        }
        let shared = &mut *self.mem.shared;
        let order = &mut *self.mem.cluster.order;
        let epoch = shared.epoch();
        let probe = |l: u32| match op {
            MbarrierOp::WaitParity | MbarrierOp::TryWaitParity => Probe::Parity(args[l as usize]),
            _ => Probe::Token(args[l as usize]),
        };
        let mut offsets = [0u32; 32];
        for l in lanes_of(mask) {
            let a = addrs[l as usize];
            offsets[l as usize] = shared.mbarrier_at(a).map_err(|f| misuse(ctx, l, a, &f))?;
        }
        if op.blocks() {
            for l in lanes_of(mask) {
                let off = offsets[l as usize];
                let done = shared
                    .mbar
                    .test(off, probe(l), ctx.tid(l), epoch)
                    .map_err(|f| misuse(ctx, l, off.into(), &f))?;
                if !done {
                    return Ok(Flow::Block { off, lane: l });
                }
            }
            for l in lanes_of(mask) {
                let (off, tid) = (offsets[l as usize], ctx.tid(l));
                shared.mbar.acquire(off, probe(l), tid);
                if let Some(k) = shared.mbar.remote_release(off, probe(l)) {
                    order.acquire(ctx.rank, tid, &k, &mut shared.mbar.clocks);
                }
            }
            return Ok(Flow::Next);
        }
        let mut out = [0u64; 32];
        let mut complete = true;
        let mut restarted = false;
        for l in lanes_of(mask) {
            let (off, tid, a) = (offsets[l as usize], ctx.tid(l), args[l as usize]);
            let m = &mut shared.mbar;
            let mut arrive = |m: &mut Mbarriers, counted: bool| -> Result<u64, MbarFault> {
                let (token, ok) = m.arrive(off, tid, epoch, counted)?;
                restarted |= !ok;
                Ok(token)
            };
            let done: Result<(), MbarFault> = match op {
                MbarrierOp::Init => m.init(off, a, tid, epoch),
                MbarrierOp::Arrive => arrive(m, true).map(|t| out[l as usize] = t),
                MbarrierOp::ArriveExpectTx => m
                    .expect_tx(off, a, tid, epoch)
                    .and_then(|()| arrive(m, true))
                    .map(|t| out[l as usize] = t),
                MbarrierOp::ExpectTx => m.expect_tx(off, a, tid, epoch),
                MbarrierOp::CpAsyncArrive { noinc } => arrive(m, noinc).map(|_| ()),
                MbarrierOp::Inval => m.inval(off, tid, epoch),
                MbarrierOp::TestWait | MbarrierOp::TryWait | MbarrierOp::TryWaitParity => {
                    m.test(off, probe(l), tid, epoch).map(|done| {
                        if done {
                            m.acquire(off, probe(l), tid);
                            if let Some(k) = m.remote_release(off, probe(l)) {
                                order.acquire(ctx.rank, tid, &k, &mut m.clocks);
                            }
                        }
                        complete &= done;
                        out[l as usize] = u64::from(done);
                    })
                }
                MbarrierOp::Wait | MbarrierOp::WaitParity | MbarrierOp::ArriveCluster => Ok(()),
            };
            done.map_err(|f| misuse(ctx, l, off.into(), &f))?;
        }
        if restarted {
            shared.clocks_restarted();
        }
        if let Some(r) = result {
            let reg = &mut self.regs[r.index()];
            for l in lanes_of(mask) {
                reg[l as usize] = out[l as usize];
            }
        }
        Ok(if complete { Flow::Next } else { Flow::Yield })
    }
}

/// The error for `lane`'s misuse `f` of the barrier at shared address `addr`.
#[cold]
pub(crate) fn misuse(ctx: Ctx, lane: u32, addr: u64, f: &MbarFault) -> EmuError {
    EmuError::MbarrierMisuse {
        kernel: ctx.kernel_name(),
        block: ctx.block_idx,
        thread: ctx.thread(lane),
        address: addr,
        message: fault_message(ctx, f),
    }
}

/// What misuse `f` is, for a message.
#[cold]
pub(crate) fn fault_message(ctx: Ctx, f: &MbarFault) -> String {
    match f {
        MbarFault::OutOfBounds => {
            "the 8-byte object does not lie inside the block's shared memory".to_string()
        }
        MbarFault::Misaligned => "the address is not a multiple of 8".to_string(),
        MbarFault::Uninitialized => "used before `mbarrier_init` set it up".to_string(),
        MbarFault::Invalidated => {
            "used after `mbarrier_inval` (initialise it again first)".to_string()
        }
        MbarFault::AlreadyLive => "initialised again while live (invalidate it first; exactly                                    one thread initialises a barrier)"
            .to_string(),
        MbarFault::Count(c) => format!("expected count {c} is outside 1..={MAX_COUNT}"),
        MbarFault::TxCount(c) => {
            format!(
                "the transaction count would reach {c}, beyond ±{MAX_COUNT} (more bytes \
                 completed than expected, or expected than can arrive)"
            )
        }
        MbarFault::ForeignToken(t) => {
            format!("token {t:#x} did not come from an arrival on this barrier")
        }
        MbarFault::UnorderedInit { init_thread } => format!(
            "used by this thread with nothing ordering the use after thread {:?}'s              `mbarrier_init` (a `sync_threads()` between them)",
            ctx.launch.thread_coords(*init_thread)
        ),
    }
}

/// The emulator's token of phase `phase` of the barrier at `off`: the offset plus one above,
/// the phase below, so a token of another barrier is recognised.
fn token(off: u32, phase: u32) -> u64 {
    ((u64::from(off) + 1) << 32) | u64::from(phase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_complete_when_every_arrival_is_in() {
        let mut m = Mbarriers::new();
        m.begin_block(64);
        assert_eq!(
            m.arrive(8, 0, 1, true),
            Err(MbarFault::Uninitialized),
            "arrive before init"
        );
        m.init(8, 3, 0, 1).unwrap();
        assert_eq!(m.init(8, 3, 0, 1), Err(MbarFault::AlreadyLive));
        let (t0, _) = m.arrive(8, 0, 1, true).unwrap();
        assert!(!m.test(8, Probe::Token(t0), 0, 1).unwrap());
        assert!(!m.test(8, Probe::Parity(0), 0, 1).unwrap());
        m.arrive(8, 0, 1, false).unwrap(); // cp.async without .noinc: no count
        m.expect_tx(8, 16, 0, 1).unwrap();
        m.arrive(8, 0, 1, true).unwrap();
        m.arrive(8, 0, 1, true).unwrap();
        // Every arrival is in, but 16 transaction bytes are still pending.
        assert!(!m.test(8, Probe::Token(t0), 0, 1).unwrap());
        assert!(
            m.describe(8)
                .contains("0 of its 3 arrivals and 16 transaction")
        );
        let mut m = Mbarriers::new();
        m.begin_block(64);
        m.init(8, 2, 0, 1).unwrap();
        let (t0, _) = m.arrive(8, 0, 1, true).unwrap();
        // Thread 1 comes after a bar.sync (epoch 2), so the init is ordered before it.
        let (t1, _) = m.arrive(8, 1, 2, true).unwrap();
        assert_eq!(t0, t1);
        assert!(m.test(8, Probe::Token(t0), 0, 2).unwrap());
        assert!(m.test(8, Probe::Parity(0), 0, 2).unwrap());
        assert!(!m.test(8, Probe::Parity(1), 0, 2).unwrap());
        let (t2, _) = m.arrive(8, 0, 1, true).unwrap();
        assert_ne!(t2, t0);
        assert!(!m.test(8, Probe::Token(t2), 0, 1).unwrap());
        assert_eq!(
            m.test(8, Probe::Token(t2 + (1 << 32)), 0, 1),
            Err(MbarFault::ForeignToken(t2 + (1 << 32)))
        );
        m.inval(8, 0, 1).unwrap();
        assert_eq!(m.arrive(8, 0, 1, true), Err(MbarFault::Invalidated));
        assert_eq!(m.init(8, 0, 0, 1), Err(MbarFault::Count(0)));
        assert_eq!(m.init(8, 1 << 20, 0, 1), Err(MbarFault::Count(1 << 20)));
    }

    #[test]
    fn a_completed_phase_orders_arrivals_before_observers() {
        let mut m = Mbarriers::new();
        m.begin_block(4);
        m.init(0, 2, 0, 1).unwrap();
        // Thread 1 uses the barrier in the init's epoch with nothing ordering it after.
        assert_eq!(
            m.arrive(0, 1, 1, true),
            Err(MbarFault::UnorderedInit { init_thread: 0 })
        );
        // After a bar.sync (another epoch) it may.
        let before = m.clocks.stamp(1);
        let (t, _) = m.arrive(0, 1, 2, true).unwrap();
        assert!(m.clocks.stamp(1) > before, "an arrival moves the stamp on");
        let after = m.clocks.stamp(1);
        m.arrive(0, 0, 2, true).unwrap();
        assert!(!m.clocks.ordered(1, before, 2));
        assert!(m.test(0, Probe::Token(t), 2, 2).unwrap());
        m.acquire(0, Probe::Token(t), 2);
        assert!(
            m.clocks.ordered(1, before, 2),
            "released before the arrival"
        );
        assert!(!m.clocks.ordered(1, after, 2), "not what came after it");
        assert!(!m.clocks.ordered(1, before, 3), "thread 3 observed nothing");
    }
}
