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
//! IR has no warp-synchronous memory model).
//!
//! Epoch and block counters only grow, so nothing is cleared between blocks or barriers; the
//! tracker is sized once per worker and reused.

use crate::error::RaceKind;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Track {
    /// Block generation in which the byte was first written (initialized iff == current).
    init: u32,
    write_epoch: u32,
    writer: u32,
    read_epoch: u32,
    reader: u32,
    /// A second reader distinct from `reader`, or `NONE`.
    reader2: u32,
    atomic_epoch: u32,
    /// Up to two distinct threads that accessed the byte atomically in `atomic_epoch`.
    atomic: u32,
    atomic2: u32,
}

const CLEAN: Track = Track {
    init: 0,
    write_epoch: 0,
    writer: NONE,
    read_epoch: 0,
    reader: NONE,
    reader2: NONE,
    atomic_epoch: 0,
    atomic: NONE,
    atomic2: NONE,
};

/// A thread of `(a, b)` other than `thread`, or `NONE`.
#[inline(always)]
fn other_than(a: u32, b: u32, thread: u32) -> u32 {
    if a != thread {
        a
    } else if b != thread {
        b
    } else {
        NONE
    }
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
}

/// One block's shared memory and its race tracker.
pub(crate) struct SharedMem {
    bytes: Vec<u8>,
    track: Vec<Track>,
    size: u32,
    epoch: u32,
    block_gen: u32,
}

impl SharedMem {
    pub(crate) fn new() -> Self {
        Self {
            bytes: Vec::new(),
            track: Vec::new(),
            size: 0,
            epoch: 0,
            block_gen: 0,
        }
    }

    /// Starts a block with `size` bytes of shared memory, all uninitialized.
    pub(crate) fn begin_block(&mut self, size: u32) {
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
            |t, epoch| {
                note(
                    &mut t.read_epoch,
                    &mut t.reader,
                    &mut t.reader2,
                    epoch,
                    thread,
                )
            },
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
        let at = self.track_access(off, size, thread, false, &checks, |t, epoch| {
            t.write_epoch = epoch;
            t.writer = thread;
            t.init = gen_;
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
        let at = self.track_access(off, size, thread, true, &checks, |t, epoch| {
            note(
                &mut t.atomic_epoch,
                &mut t.atomic,
                &mut t.atomic2,
                epoch,
                thread,
            )
        })?;
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
        mut record: impl FnMut(&mut Track, u32),
    ) -> Result<usize, SharedFault> {
        let at = self.check(off, size)?;
        let (epoch, gen_) = (self.epoch, self.block_gen);
        for (i, t) in self.track[at..at + size as usize].iter_mut().enumerate() {
            let offset = off + i as u32;
            if reads && t.init != gen_ {
                return Err(SharedFault::Uninitialized { offset });
            }
            for &(earlier, kind) in checks {
                let first = t.other(earlier, epoch, thread);
                if first != NONE {
                    return Err(SharedFault::Race {
                        first,
                        second: thread,
                        offset,
                        kind,
                    });
                }
            }
            record(t, epoch);
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
    /// A thread other than `thread` that made an `earlier` access in `epoch`, or `NONE`.
    fn other(&self, earlier: Earlier, epoch: u32, thread: u32) -> u32 {
        match earlier {
            Earlier::Writer if self.write_epoch == epoch && self.writer != thread => self.writer,
            Earlier::Readers if self.read_epoch == epoch => {
                other_than(self.reader, self.reader2, thread)
            }
            Earlier::Atomics if self.atomic_epoch == epoch => {
                other_than(self.atomic, self.atomic2, thread)
            }
            _ => NONE,
        }
    }
}

/// Records `thread` among up to two distinct threads that accessed a byte in `epoch`.
fn note(slot_epoch: &mut u32, first: &mut u32, second: &mut u32, epoch: u32, thread: u32) {
    if *slot_epoch != epoch {
        *slot_epoch = epoch;
        *first = thread;
        *second = NONE;
    } else if *first != thread && *second == NONE {
        *second = thread;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn races_and_epochs() {
        let mut s = SharedMem::new();
        s.begin_block(64);
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
        // A new block forgets initialization.
        s.begin_block(64);
        assert_eq!(
            s.load(0, 4, 0),
            Err(SharedFault::Uninitialized { offset: 0 })
        );
    }
}
