//! A block's shared memory, with the bookkeeping that finds races and uninitialized reads.
//!
//! The warps of a block run on one CPU thread, so the bytes are a plain `Vec<u8>`. Beside each
//! byte the tracker keeps, for the current *epoch* (the stretch between two barriers), which
//! thread last wrote it and up to two distinct threads that read it, plus the block in which it
//! was first written. With that, between two barriers:
//! * a write by thread B after a write by thread A is a write/write race;
//! * a read by B after a write by A, or a write by B after a read by A, is a read/write race;
//! * a read of a byte no thread of this block has written is an uninitialized read.
//!
//! Accesses by one thread never race with themselves. Atomics never race with each other, but
//! an atomic and a plain access by different threads in one epoch do (as a write, and as a read
//! for the uninitialized check); up to two atomic threads per byte are remembered. Lanes of
//! one warp are separate threads: two lanes storing to one byte in a single store race, and so
//! does lane A reading a byte that lane B of the same warp writes before the next barrier (the
//! IR has no warp-synchronous memory model). The TMA's writes into a load's destination are
//! checked against every epoch since the load's issue, not only the landing's (see
//! [`crate::tma`]).
//!
//! An mbarrier phase orders less than a barrier: only the arriving threads' accesses before
//! their arrivals before the observing threads' accesses after they saw the phase complete.
//! So each record also keeps the accessing thread's *stamp* ([`crate::mbarrier`]'s vector
//! clocks): an earlier access of this epoch by another thread is no conflict when the clocks
//! say it happens before the new one. A thread's records are updated to its newest stamp, and
//! a reader or atomic record of a third thread replaces one that happens before it (a later
//! access that conflicts with the replaced one conflicts with the new one too).
//!
//! Ordered atomics on shared memory order the same way, per location: a releasing one
//! (`Release`, `AcqRel`, `SeqCst`) publishes its thread's accesses and knowledge on the
//! location, an acquiring one there makes what was published known to its thread
//! (`SharedMem::atomic_release`, `atomic_acquire`; the tile lowering's counted rings, a last
//! warp reading what the others wrote). Relaxed ones order nothing.
//!
//! Epoch and block counters only grow, so nothing is cleared between blocks or barriers; the
//! tracker is sized once per worker and reused. The block's mbarrier objects live here too
//! (their bytes are shared memory; their state is [`Mbarriers`]).

use crate::error::RaceKind;
use crate::mbarrier::{Clocks, Mbarriers};

const NONE: u32 = u32::MAX;

/// Up to two distinct threads that made one kind of access to a byte in `epoch`, with the
/// stamp of each one's newest such access.
#[derive(Clone, Copy)]
struct Pair {
    epoch: u32,
    first: u32,
    first_stamp: u32,
    /// A second thread distinct from `first`, or `NONE`.
    second: u32,
    second_stamp: u32,
}

const EMPTY: Pair = Pair {
    epoch: 0,
    first: NONE,
    first_stamp: 0,
    second: NONE,
    second_stamp: 0,
};

#[derive(Clone, Copy)]
struct Track {
    /// Block generation in which the byte was first written (initialized iff == current).
    init: u32,
    write_epoch: u32,
    writer: u32,
    write_stamp: u32,
    readers: Pair,
    /// Threads that accessed the byte atomically.
    atomics: Pair,
    /// The block's proxy-fence tick when the byte was last written ([`SharedMem::proxy_fence`]).
    write_tick: u32,
}

const CLEAN: Track = Track {
    init: 0,
    write_epoch: 0,
    writer: NONE,
    write_stamp: 0,
    readers: EMPTY,
    atomics: EMPTY,
    write_tick: 0,
};

/// Shared bytes the tensor memory accelerator owns for now: the destination of a load that
/// has not landed, or the source of a store that no `wait_group.read` has covered yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The first byte.
    pub(crate) start: u32,
    /// One past the last byte.
    pub(crate) end: u32,
    /// A load's destination (no thread may touch it) rather than a store's source (no
    /// thread may write it).
    pub(crate) load: bool,
    /// The issuing thread.
    pub(crate) issuer: u32,
    /// The issuing thread's block, when another block of the cluster multicast the copy.
    pub(crate) origin: Option<crate::error::Dim3>,
}

/// Why a shared access failed; the warp adds kernel, block and thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SharedFault {
    OutOfBounds,
    Misaligned,
    Uninitialized {
        offset: u32,
    },
    Race {
        first: u32,
        second: u32,
        offset: u32,
        kind: RaceKind,
    },
    /// An access of bytes the TMA owns ([`Pending`]).
    Pending {
        offset: u32,
        pending: Pending,
    },
    /// A race between a thread and the TMA agent's access (`agent_first`: the TMA's came
    /// first).
    Agent {
        offset: u32,
        thread: u32,
        agent_first: bool,
    },
    /// A TMA store's read of a byte `writer` wrote with no proxy fence since.
    NoProxyFence {
        offset: u32,
        writer: u32,
    },
}

/// One block's shared memory and its race tracker.
pub(crate) struct SharedMem {
    bytes: Vec<u8>,
    track: Vec<Track>,
    size: u32,
    epoch: u32,
    block_gen: u32,
    /// The block's mbarrier objects and the clocks of their ordering.
    pub(crate) mbar: Mbarriers,
    /// The thread id of the block's tensor memory accelerator (one past its last thread),
    /// which its accesses are recorded with.
    pub(crate) agent: u32,
    /// Bytes the TMA owns for now.
    pub(crate) pending: Vec<Pending>,
    /// Counts the block's `fence.proxy.async`s.
    tick: u32,
    /// Per thread: the tick its last `fence.proxy.async` left (0: none).
    fenced: Vec<u32>,
    /// The block's bulk copies in flight ([`crate::tma`]).
    pub(crate) tma: crate::tma::BulkState,
    /// The block's named barriers (`bar.sync id, n`), ordered through `mbar`'s clocks.
    pub(crate) named: crate::wgmma::NamedBarriers,
    /// Other blocks' accesses of these bytes (distributed shared memory, `crate::dsmem`).
    pub(crate) remote: crate::dsmem::RemoteLog,
    /// The block's first epoch: records of earlier ones are another block's.
    first_epoch: u32,
    /// While the TMA performs a load: the epoch its issuer issued it in. Its writes race
    /// with this block's accesses since then that nothing orders before the issue: a barrier
    /// after the issue does not order the copy, which runs any time until it completes.
    agent_since: Option<u32>,
    /// Per location of an ordered atomic: what releasing atomics on it published (through
    /// `mbar`'s clocks), for acquiring ones to make known (see [`SharedMem::atomic_release`]).
    atomic_releases: std::collections::HashMap<u32, Vec<u32>>,
}

impl SharedMem {
    pub(crate) fn new() -> Self {
        Self {
            bytes: Vec::new(),
            track: Vec::new(),
            size: 0,
            epoch: 0,
            block_gen: 0,
            mbar: Mbarriers::new(),
            agent: 0,
            pending: Vec::new(),
            tick: 0,
            fenced: Vec::new(),
            tma: crate::tma::BulkState::default(),
            named: crate::wgmma::NamedBarriers::new(),
            remote: crate::dsmem::RemoteLog::default(),
            first_epoch: 0,
            agent_since: None,
            atomic_releases: std::collections::HashMap::new(),
        }
    }

    /// Starts a block of `threads` threads with `size` bytes of shared memory, all
    /// uninitialized, and no live mbarrier.
    pub(crate) fn begin_block(&mut self, size: u32, threads: u32) {
        let n = size as usize;
        if self.bytes.len() < n {
            self.bytes.resize(n, crate::memory::POISON);
            self.track.resize(n, CLEAN);
        }
        self.size = size;
        self.block_gen = self.block_gen.wrapping_add(1);
        self.next_epoch();
        if self.block_gen == 0 {
            self.reset();
        }
        // One more thread than the block has: the tensor memory accelerator.
        if !self.mbar.begin_block(threads + 1) {
            self.next_epoch();
        }
        self.agent = threads;
        self.atomic_releases.clear();
        self.pending.clear();
        self.tick = 0;
        self.fenced.clear();
        self.fenced.resize(threads as usize + 1, 0);
        self.tma.clear();
        self.named.begin_block();
        self.remote.clear();
        self.first_epoch = self.epoch;
    }

    /// `fence.proxy.async` by `thread`: its generic writes so far may be read by the TMA.
    pub(crate) fn proxy_fence(&mut self, thread: u32) {
        self.tick = self.tick.wrapping_add(1).max(1);
        if let Some(f) = self.fenced.get_mut(thread as usize) {
            *f = self.tick;
        }
    }

    /// An async-proxy read of `size` bytes at `off` for `reader`: a `wgmma`'s read of an
    /// operand (`reader`: the warp's lane 0) or a TMA store's read of its source (`reader`:
    /// the issuer, when it issues it). Every byte a thread wrote (ordinary stores,
    /// `cp.async`) must have been fenced for the async proxy since, by its writer or by the
    /// reader; the read is then race-checked as `reader`'s.
    pub(crate) fn async_proxy_load(
        &mut self,
        off: u32,
        size: u32,
        reader: u32,
    ) -> Result<u64, SharedFault> {
        self.check_proxy_fenced(off, size, reader)?;
        self.load(off, size, reader)
    }

    /// Whether every byte of `size` at `off` that a thread wrote was fenced for the async
    /// proxy since, by its writer or by `issuer`.
    fn check_proxy_fenced(&mut self, off: u32, size: u32, issuer: u32) -> Result<(), SharedFault> {
        let at = self.check(off, size)?;
        for (i, t) in self.track[at..at + size as usize].iter().enumerate() {
            let w = t.writer;
            if t.init == self.block_gen && w != NONE && w != self.agent {
                let fenced = |x: u32| {
                    self.fenced
                        .get(x as usize)
                        .is_some_and(|&f| f > t.write_tick)
                };
                if !fenced(w) && !fenced(issuer) {
                    return Err(SharedFault::NoProxyFence {
                        offset: off + i as u32,
                        writer: w,
                    });
                }
            }
        }
        Ok(())
    }

    /// The TMA writes the low `size` bytes of `value` at `off` (a load landing).
    pub(crate) fn agent_store(
        &mut self,
        off: u32,
        size: u32,
        value: u64,
        issued: Option<u32>,
    ) -> Result<(), SharedFault> {
        self.agent_since = issued;
        let stored = self.store(off, size, value, self.agent);
        self.agent_since = None;
        stored
    }

    /// The current epoch (barrier interval).
    pub(crate) fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The offset of an 8-byte mbarrier object at `off` after the bounds and alignment
    /// checks, or the fault.
    pub(crate) fn mbarrier_at(&self, off: u64) -> Result<u32, crate::mbarrier::MbarFault> {
        if off
            .checked_add(8)
            .is_none_or(|end| end > u64::from(self.size))
        {
            return Err(crate::mbarrier::MbarFault::OutOfBounds);
        }
        if !off.is_multiple_of(8) {
            return Err(crate::mbarrier::MbarFault::Misaligned);
        }
        Ok(off as u32)
    }

    /// The clocks started over ([`Mbarriers::begin_block`]): every recorded stamp is
    /// meaningless now, so start a new epoch, in which no earlier access conflicts.
    pub(crate) fn clocks_restarted(&mut self) {
        self.atomic_releases.clear();
        self.next_epoch();
    }

    /// A releasing atomic (`Release`, `AcqRel`, `SeqCst`) of `thread` at `off`: what the
    /// thread did and knows so far is published on the location, for a later acquiring
    /// atomic there (by the block's own threads) to order after it, as an mbarrier phase
    /// does. Publications add up, so an acquire that reads the last of a chain of
    /// read-modify-writes orders every release before it (a release sequence).
    pub(crate) fn atomic_release(&mut self, off: u32, thread: u32) {
        let published = self.atomic_releases.entry(off).or_default();
        if !self.mbar.clocks.release(thread, published) {
            self.clocks_restarted();
        }
    }

    /// An acquiring atomic (`Acquire`, `AcqRel`, `SeqCst`) of `thread` at `off`: what
    /// releasing atomics published there happens before the thread's later accesses.
    pub(crate) fn atomic_acquire(&mut self, off: u32, thread: u32) {
        if let Some(published) = self.atomic_releases.get(&off) {
            self.mbar.clocks.acquire(thread, published);
        }
    }

    /// A barrier: accesses before it no longer conflict with accesses after it.
    pub(crate) fn next_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.reset();
        }
    }

    /// Counter wrap-around (after 2^32 barriers or blocks): forget everything but which bytes
    /// the current block has written, and restart both counters at 1.
    fn reset(&mut self) {
        let live = self.block_gen;
        for t in &mut self.track {
            let init = u32::from(live != 0 && t.init == live);
            *t = Track { init, ..CLEAN };
        }
        self.epoch = 1;
        self.block_gen = 1;
        self.first_epoch = 1;
    }

    /// An access of `size` bytes at `off` by a thread of another block of the cluster
    /// (distributed shared memory, `crate::dsmem`): a store of `store`'s value, or a load
    /// (`None`), whose value it returns. Every access this block's threads (and its TMA
    /// agent) made of those bytes in this block, in any epoch (this block's barriers order
    /// nothing for another block's thread), must be one that `known(thread, stamp, epoch)`
    /// says happens before it; a load's bytes must have been written in this block. A race
    /// is a [`SharedFault::Race`] whose `second` is `u32::MAX` (the accessor is not one of
    /// this block's threads). A store replaces the bytes' records: what is ordered after it
    /// is ordered after them, and what is not conflicts with it (`crate::dsmem` keeps it).
    pub(crate) fn remote_access(
        &mut self,
        off: u32,
        size: u32,
        store: Option<u64>,
        known: impl Fn(u32, u32, u32) -> bool,
    ) -> Result<u64, SharedFault> {
        let at = self.check(off, size)?;
        let end = off + size;
        if let Some(p) = self
            .pending
            .iter()
            .find(|p| p.start < end && off < p.end && (p.load || store.is_some()))
        {
            return Err(SharedFault::Pending {
                offset: off.max(p.start),
                pending: *p,
            });
        }
        let (gen_, first) = (self.block_gen, self.first_epoch);
        let race = |offset: u32, thread: u32, kind: RaceKind| SharedFault::Race {
            first: thread,
            second: NONE,
            offset,
            kind,
        };
        // The threads of a pair whose accesses of this block nothing orders before it.
        let unordered = |p: &Pair| {
            [(p.first, p.first_stamp), (p.second, p.second_stamp)]
                .into_iter()
                .find(|&(t, s)| p.epoch >= first && t != NONE && !known(t, s, p.epoch))
                .map(|(t, _)| t)
        };
        for (i, t) in self.track[at..at + size as usize].iter().enumerate() {
            let offset = off + i as u32;
            if store.is_none() && t.init != gen_ {
                return Err(SharedFault::Uninitialized { offset });
            }
            let write = if store.is_some() {
                RaceKind::WriteWrite
            } else {
                RaceKind::ReadWrite
            };
            if t.write_epoch >= first
                && t.writer != NONE
                && !known(t.writer, t.write_stamp, t.write_epoch)
            {
                return Err(race(offset, t.writer, write));
            }
            if let Some(a) = unordered(&t.atomics) {
                return Err(race(offset, a, write));
            }
            if store.is_some()
                && let Some(r) = unordered(&t.readers)
            {
                return Err(race(offset, r, RaceKind::ReadWrite));
            }
        }
        let Some(value) = store else {
            return Ok(self.value(at, size));
        };
        for t in &mut self.track[at..at + size as usize] {
            *t = Track {
                init: gen_,
                ..CLEAN
            };
        }
        self.bytes[at..at + size as usize].copy_from_slice(&value.to_le_bytes()[..size as usize]);
        Ok(value)
    }

    #[inline]
    fn check(&self, off: u32, size: u32) -> Result<usize, SharedFault> {
        match off.checked_add(size) {
            Some(end) if end <= self.size => {}
            _ => return Err(SharedFault::OutOfBounds),
        }
        if !off.is_multiple_of(size) {
            return Err(SharedFault::Misaligned);
        }
        Ok(off as usize)
    }

    #[inline]
    fn value(&self, at: usize, size: u32) -> u64 {
        let mut b = [0u8; 8];
        b[..size as usize].copy_from_slice(&self.bytes[at..at + size as usize]);
        u64::from_le_bytes(b)
    }

    /// The `size` bytes at `off` as they are, without race tracking (0 outside the block's
    /// memory): what a wgmma snapshots of its operands when it is issued.
    pub(crate) fn peek(&self, off: u32, size: u32) -> u64 {
        let at = off as usize;
        if at + size as usize > self.size as usize {
            return 0;
        }
        self.value(at, size)
    }

    /// A plain load of `size` bytes at `off` by block thread `thread`.
    pub(crate) fn load(&mut self, off: u32, size: u32, thread: u32) -> Result<u64, SharedFault> {
        use Earlier::*;
        let at = self.track_access(
            off,
            size,
            thread,
            true,
            &[
                (Writer, RaceKind::ReadWrite),
                (Atomics, RaceKind::ReadWrite),
            ],
            |t, epoch, stamp, clocks| t.readers.note(epoch, thread, stamp, clocks),
        )?;
        Ok(self.value(at, size))
    }

    /// A plain store of the low `size` bytes of `value` at `off` by `thread`.
    pub(crate) fn store(
        &mut self,
        off: u32,
        size: u32,
        value: u64,
        thread: u32,
    ) -> Result<(), SharedFault> {
        use Earlier::*;
        let gen_ = self.block_gen;
        let checks = [
            (Writer, RaceKind::WriteWrite),
            (Readers, RaceKind::ReadWrite),
            (Atomics, RaceKind::WriteWrite),
        ];
        let tick = self.tick;
        let at = self.track_access(off, size, thread, false, &checks, |t, epoch, stamp, _| {
            t.write_epoch = epoch;
            t.writer = thread;
            t.write_stamp = stamp;
            t.init = gen_;
            t.write_tick = tick;
        })?;
        self.bytes[at..at + size as usize].copy_from_slice(&value.to_le_bytes()[..size as usize]);
        Ok(())
    }

    /// An atomic read-modify-write: replaces the value `v` at `off` by `f(v)`, returns `v`.
    pub(crate) fn atomic(
        &mut self,
        off: u32,
        size: u32,
        thread: u32,
        f: impl FnOnce(u64) -> u64,
    ) -> Result<u64, SharedFault> {
        use Earlier::*;
        let checks = [
            (Writer, RaceKind::WriteWrite),
            (Readers, RaceKind::ReadWrite),
        ];
        let at = self.track_access(
            off,
            size,
            thread,
            true,
            &checks,
            |t, epoch, stamp, clocks| t.atomics.note(epoch, thread, stamp, clocks),
        )?;
        let old = self.value(at, size);
        let new = f(old);
        self.bytes[at..at + size as usize].copy_from_slice(&new.to_le_bytes()[..size as usize]);
        Ok(old)
    }

    /// The tracking every access shares: bounds and alignment, then per byte the
    /// uninitialized-read check (`reads`), the race `checks` against other threads' earlier
    /// accesses in this epoch, and `record` of this access. Returns the byte offset.
    fn track_access(
        &mut self,
        off: u32,
        size: u32,
        thread: u32,
        reads: bool,
        checks: &[(Earlier, RaceKind)],
        mut record: impl FnMut(&mut Track, u32, u32, &Clocks),
    ) -> Result<usize, SharedFault> {
        let at = self.check(off, size)?;
        if thread != self.agent {
            let writes = checks.iter().any(|(e, _)| matches!(e, Earlier::Readers));
            let end = off + size;
            if let Some(p) = self
                .pending
                .iter()
                .find(|p| p.start < end && off < p.end && (p.load || writes))
            {
                return Err(SharedFault::Pending {
                    offset: off.max(p.start),
                    pending: *p,
                });
            }
        }
        let agent = self.agent;
        let (epoch, gen_) = (self.epoch, self.block_gen);
        // Epochs only grow: a load's issue epoch is at most the current one.
        let since = match self.agent_since {
            Some(issued) if thread == agent => issued,
            _ => epoch,
        };
        let clocks = &self.mbar.clocks;
        let stamp = clocks.stamp(thread);
        for (i, t) in self.track[at..at + size as usize].iter_mut().enumerate() {
            let offset = off + i as u32;
            if reads && t.init != gen_ {
                return Err(SharedFault::Uninitialized { offset });
            }
            for &(earlier, kind) in checks {
                let first = t.other(earlier, [since, epoch], thread, clocks);
                if first != NONE && (first == agent || thread == agent) {
                    return Err(SharedFault::Agent {
                        offset,
                        thread: if first == agent { thread } else { first },
                        agent_first: first == agent,
                    });
                }
                if first != NONE {
                    return Err(SharedFault::Race {
                        first,
                        second: thread,
                        offset,
                        kind,
                    });
                }
            }
            record(t, epoch, stamp, clocks);
        }
        Ok(at)
    }
}

/// Which earlier accesses of a byte, in the current epoch, a new access may race with.
#[derive(Clone, Copy)]
enum Earlier {
    Writer,
    Readers,
    Atomics,
}

impl Track {
    /// A thread other than `thread` that made an `earlier` access in the epochs `since..=epoch`
    /// (the current one, or since a TMA load's issue) that nothing orders before `thread`'s
    /// accesses now, or `NONE`.
    #[inline]
    fn other(
        &self,
        earlier: Earlier,
        [since, epoch]: [u32; 2],
        thread: u32,
        clocks: &Clocks,
    ) -> u32 {
        match earlier {
            Earlier::Writer
                if (since..=epoch).contains(&self.write_epoch)
                    && self.writer != thread
                    && !clocks.ordered(self.writer, self.write_stamp, thread) =>
            {
                self.writer
            }
            Earlier::Readers => self.readers.unordered([since, epoch], thread, clocks),
            Earlier::Atomics => self.atomics.unordered([since, epoch], thread, clocks),
            _ => NONE,
        }
    }
}

impl Pair {
    /// A thread of the pair other than `thread` whose access in the epochs `since..=epoch` is
    /// not ordered before `thread`'s accesses now, or `NONE`.
    #[inline]
    fn unordered(&self, [since, epoch]: [u32; 2], thread: u32, clocks: &Clocks) -> u32 {
        if !(since..=epoch).contains(&self.epoch) {
            return NONE;
        }
        let conflicts = |t: u32, stamp: u32| t != thread && !clocks.ordered(t, stamp, thread);
        if self.first != NONE && conflicts(self.first, self.first_stamp) {
            self.first
        } else if self.second != NONE && conflicts(self.second, self.second_stamp) {
            self.second
        } else {
            NONE
        }
    }

    /// Records an access by `thread` with `stamp` in `epoch` (see the module docs for which
    /// records it updates or replaces).
    fn note(&mut self, epoch: u32, thread: u32, stamp: u32, clocks: &Clocks) {
        if self.epoch != epoch {
            *self = Pair {
                epoch,
                first: thread,
                first_stamp: stamp,
                ..EMPTY
            };
        } else if self.first == thread {
            self.first_stamp = stamp;
        } else if self.second == thread {
            self.second_stamp = stamp;
        } else if self.second == NONE {
            self.second = thread;
            self.second_stamp = stamp;
        } else if clocks.ordered(self.first, self.first_stamp, thread) {
            self.first = thread;
            self.first_stamp = stamp;
        } else if clocks.ordered(self.second, self.second_stamp, thread) {
            self.second = thread;
            self.second_stamp = stamp;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mbarrier::Probe;

    #[test]
    fn races_and_epochs() {
        let mut s = SharedMem::new();
        s.begin_block(64, 32);
        assert_eq!(
            s.load(0, 4, 0),
            Err(SharedFault::Uninitialized { offset: 0 })
        );
        s.store(0, 4, 7, 0).unwrap();
        assert_eq!(s.load(0, 4, 0), Ok(7));
        assert!(matches!(
            s.load(0, 4, 1),
            Err(SharedFault::Race {
                first: 0,
                second: 1,
                kind: RaceKind::ReadWrite,
                ..
            })
        ));
        s.next_epoch();
        assert_eq!(s.load(0, 4, 1), Ok(7));
        assert_eq!(s.load(0, 4, 2), Ok(7));
        assert!(matches!(
            s.store(0, 4, 1, 1),
            Err(SharedFault::Race {
                first: 2,
                second: 1,
                kind: RaceKind::ReadWrite,
                ..
            })
        ));
        s.next_epoch();
        s.store(8, 4, 1, 3).unwrap();
        assert!(matches!(
            s.store(8, 4, 1, 4),
            Err(SharedFault::Race {
                first: 3,
                second: 4,
                kind: RaceKind::WriteWrite,
                ..
            })
        ));
        assert_eq!(s.store(62, 4, 0, 0), Err(SharedFault::OutOfBounds));
        assert_eq!(s.store(2, 4, 0, 0), Err(SharedFault::Misaligned));
        // Atomics: fine among themselves, racing with plain accesses of other threads.
        s.next_epoch();
        s.store(16, 4, 0, 0).unwrap();
        s.next_epoch();
        for t in 0..5 {
            s.atomic(16, 4, t, |v| v + 1).unwrap();
        }
        assert!(matches!(
            s.load(16, 4, 0),
            Err(SharedFault::Race {
                second: 0,
                kind: RaceKind::ReadWrite,
                ..
            })
        ));
        assert!(matches!(
            s.store(16, 4, 9, 7),
            Err(SharedFault::Race {
                first: 0,
                second: 7,
                kind: RaceKind::WriteWrite,
                ..
            })
        ));
        s.next_epoch();
        assert_eq!(s.load(16, 4, 3), Ok(5));
        assert!(matches!(
            s.atomic(16, 4, 4, |v| v),
            Err(SharedFault::Race {
                first: 3,
                second: 4,
                kind: RaceKind::ReadWrite,
                ..
            })
        ));
        // An mbarrier phase orders its arrivals' accesses before its observers' only.
        s.next_epoch();
        let e = s.epoch();
        s.mbar.init(56, 1, 0, e).unwrap();
        s.store(0, 4, 11, 0).unwrap();
        let (token, _) = s.mbar.arrive(56, 0, e, true).unwrap();
        assert!(s.mbar.test(56, Probe::Token(token), 0, e).unwrap());
        s.mbar.acquire(56, Probe::Token(token), 1);
        assert_eq!(s.load(0, 4, 1), Ok(11), "thread 1 observed the phase");
        assert!(matches!(
            s.load(0, 4, 2),
            Err(SharedFault::Race {
                first: 0,
                second: 2,
                ..
            })
        ));
        // Thread 0's store after its arrival is not covered.
        s.store(4, 4, 12, 0).unwrap();
        assert!(matches!(s.load(4, 4, 1), Err(SharedFault::Race { .. })));
        // A new block forgets initialization.
        s.begin_block(64, 32);
        assert_eq!(
            s.load(0, 4, 0),
            Err(SharedFault::Uninitialized { offset: 0 })
        );
    }
}
