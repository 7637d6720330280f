//! The storage of the global race tracker: per allocation, two record slots per 4-byte
//! granule, in groups of 64 granules under a header that says which launch (generation) the
//! group's records belong to and which block uses it.
//!
//! Why it looks like this (measured on the 1M-element vector add of the test suite, where a
//! straightforward shadow made the launch three times slower):
//! * An allocation keeps its shadow from launch to launch and a launch starts a new
//!   generation, so nothing is cleared or faulted in anew per launch. A group's records are
//!   valid only where its bitmaps say so; the bitmaps are reset when a launch first touches the
//!   group, so a record is never read before it is written in this generation. (The words
//!   start as zero pages of the system; reading those before writing would turn every first
//!   write into a page copy with a TLB shootdown.)
//! * The first block to touch a group in a launch owns it and updates its records with plain
//!   loads and stores: no atomic read-modify-write on the path of an access that races with
//!   nothing. When another block touches the group, it becomes shared: updates take the
//!   group's lock, checks that change nothing do not. A block that still believes it owns the
//!   group may finish one unlocked update meanwhile; that can lose a record (miss a race),
//!   never make one up.
//! * A warp whose 32 lanes read or write 32 consecutive 4-byte elements (the common case) has
//!   records that differ only in the thread: such a first access of half a group is stored as
//!   one *run* (the record of the half's first granule; granule `i` of the half holds it plus
//!   `i` threads), not 32 words. A later access to one granule of a run turns that granule
//!   into an explicit record.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::global::{READ, WRITE};

/// Bytes per granule.
pub(crate) const GRANULE: u64 = 4;
/// Granules per group (one bit each in the bitmaps); runs cover half a group.
const GROUP: usize = 64;
const HALF: usize = GROUP / 2;
/// Group states: the low half of a header (the high half is the generation).
const CLEARING: u64 = 1;
const SHARED: u64 = 2;
const LOCKED: u64 = 3;
/// `OWNED + block`: only that block has touched the group in this generation.
const OWNED: u64 = 4;
const STATE: u64 = 0xFFFF_FFFF;

/// One group's header and bitmaps, on a cache line of its own (neighbouring groups usually
/// belong to blocks running on different cores).
#[derive(Default)]
#[repr(align(64))]
struct Group {
    header: AtomicU64,
    /// Granules whose first and second slots hold explicit records of this generation.
    valid: [AtomicU64; 2],
    /// Granules whose first slot is given by the run of their half.
    run_bits: AtomicU64,
    /// Per half: the record of its first granule, for the granules in `run_bits`.
    runs: [AtomicU64; 2],
}

/// What [`Shadow::read`] found in a granule, and the bitmaps that said so.
struct Found {
    records: [u64; 2],
    valid: [u64; 2],
    run_bits: u64,
}

/// The granules a warp instruction touches, for [`Shadow::warp`].
#[derive(Clone, Copy)]
pub(crate) struct WarpGranules {
    /// The lanes that access memory.
    pub(crate) lanes: u32,
    /// Lane `l` touches granules `first[l]..first[l] + count`.
    pub(crate) first: [u64; 32],
    pub(crate) count: u64,
    /// Whether lane `l`'s record is lane 0's plus `l` threads (one granule per lane), so that
    /// consecutive lanes can be stored as a run.
    pub(crate) linear: bool,
}

/// The shadow of one allocation.
pub(crate) struct Shadow {
    /// Incremented by every launch that takes the shadow (kept below 2^32).
    generation: u64,
    /// Where a record's thread field lies, for runs (the launch's record layout).
    tid_shift: u32,
    groups: Box<[Group]>,
    /// Per group: the first slot of its 64 granules, then the second.
    words: Box<[AtomicU64]>,
}

impl Shadow {
    /// A shadow for `len` bytes; `None` when there is no memory for it.
    pub(crate) fn new(len: u64) -> Option<Self> {
        let granules = usize::try_from(len.div_ceil(GRANULE)).ok()?;
        let groups = granules.div_ceil(GROUP);
        let mut headers = Vec::new();
        headers.try_reserve_exact(groups).ok()?;
        headers.resize_with(groups, Group::default);
        let words = bytemuck::allocation::try_zeroed_slice_box(groups.checked_mul(2 * GROUP)?);
        Some(Self {
            generation: 0,
            tid_shift: 0,
            groups: headers.into_boxed_slice(),
            words: words.ok()?,
        })
    }

    /// Starts a launch whose records keep the thread at bit `tid_shift`: a new generation,
    /// in which every group is stale (empty).
    pub(crate) fn next_generation(&mut self, tid_shift: u32) {
        self.tid_shift = tid_shift;
        self.generation += 1;
        if self.generation >> 32 != 0 {
            // The generations would repeat: start again from clean headers.
            for g in self.groups.iter_mut() {
                *g.header.get_mut() = 0;
            }
            self.generation = 1;
        }
    }

    fn mine(&self, block: u64) -> u64 {
        (self.generation << 32) | (OWNED + block)
    }

    /// The records of slot `slot` of group `g`.
    #[inline]
    fn read(&self, group: &Group, g: usize, slot: usize) -> Found {
        let bit = 1u64 << slot;
        let valid = [
            group.valid[0].load(Ordering::Acquire),
            group.valid[1].load(Ordering::Acquire),
        ];
        let run_bits = group.run_bits.load(Ordering::Acquire);
        let word = |i: usize| self.words[2 * GROUP * g + i * GROUP + slot].load(Ordering::Relaxed);
        let first = if valid[0] & bit != 0 {
            word(0)
        } else if run_bits & bit != 0 {
            self.run_record(group, slot)
        } else {
            0
        };
        let second = if valid[1] & bit != 0 { word(1) } else { 0 };
        Found {
            records: [first, second],
            valid,
            run_bits,
        }
    }

    /// The record a run gives granule `slot` of its group.
    #[inline]
    fn run_record(&self, group: &Group, slot: usize) -> u64 {
        let start = group.runs[slot / HALF].load(Ordering::Relaxed);
        start.wrapping_add(((slot % HALF) as u64) << self.tid_shift)
    }

    /// Makes `new` the records of slot `slot` of group `g`, which were `old`.
    #[inline]
    fn write(&self, group: &Group, g: usize, slot: usize, old: &Found, new: [u64; 2]) {
        let bit = 1u64 << slot;
        for (i, (&record, &was)) in new.iter().zip(&old.records).enumerate() {
            if record == was {
                continue;
            }
            self.words[2 * GROUP * g + i * GROUP + slot].store(record, Ordering::Relaxed);
            if old.valid[i] & bit == 0 {
                group.valid[i].store(old.valid[i] | bit, Ordering::Release);
            }
            if i == 0 && old.run_bits & bit != 0 {
                group.run_bits.store(old.run_bits & !bit, Ordering::Release);
            }
        }
    }

    /// Updates the two records of `granule` as block `block`: `decide` gets them (0 for an
    /// empty slot) and returns the new ones (`None`: unchanged) or an error. It may be called
    /// twice (once without the lock of a shared group).
    #[inline]
    pub(crate) fn update<E>(
        &self,
        granule: u64,
        block: u64,
        decide: impl Fn([u64; 2]) -> Result<Option<[u64; 2]>, E>,
    ) -> Result<(), E> {
        let Some((g, slot)) = usize::try_from(granule)
            .ok()
            .map(|i| (i / GROUP, i % GROUP))
            .filter(|&(g, _)| g < self.groups.len())
        else {
            return Ok(());
        };
        let group = &self.groups[g];
        let mine = self.mine(block);
        let h = group.header.load(Ordering::Acquire);
        let locked = h != mine && {
            if h == (self.generation << 32) | SHARED {
                // Most accesses to a shared group change nothing: decide without the lock.
                if decide(self.read(group, g, slot).records)?.is_none() {
                    return Ok(());
                }
            }
            self.enter(group, mine)
        };
        let old = self.read(group, g, slot);
        let result = decide(old.records);
        if let Ok(Some(new)) = result {
            self.write(group, g, slot, &old, new);
        }
        if locked {
            let shared = (self.generation << 32) | SHARED;
            group.header.store(shared, Ordering::Release);
        }
        result.map(|_| ())
    }

    /// The common case of a whole warp instruction, done at once. The lanes of `w` access
    /// their granules, each lane its own, all in one group the calling block owns (or claims
    /// now); either every granule is empty, and each gets `record(l)`, or every one holds a
    /// record for which `same(l, r)` says there is nothing to do. Returns false, having
    /// changed nothing, in every other case.
    #[inline]
    pub(crate) fn warp(
        &self,
        w: &WarpGranules,
        block: u64,
        record: impl Fn(usize) -> u64,
        same: impl Fn(usize, u64) -> bool,
    ) -> bool {
        let WarpGranules {
            lanes,
            first,
            count,
            linear,
        } = *w;
        let first = &first;
        if lanes == 0 {
            return true;
        }
        let lead = lanes.trailing_zeros() as usize;
        let g = first[lead] / GROUP as u64;
        let mut bits = 0u64;
        // Whether lane `l` is at slot `l + shift`, for a run.
        let shift = first[lead].wrapping_sub(lead as u64);
        let mut consecutive = linear && count == 1;
        let mut m = lanes;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            let at = first[l];
            if at / GROUP as u64 != g || (at + count - 1) / GROUP as u64 != g {
                return false;
            }
            let lane_bits = (u64::MAX >> (64 - count)) << (at % GROUP as u64);
            if bits & lane_bits != 0 {
                return false;
            }
            bits |= lane_bits;
            consecutive &= at.wrapping_sub(l as u64) == shift;
        }
        let Some(group) = usize::try_from(g).ok().and_then(|g| self.groups.get(g)) else {
            return false;
        };
        let g = g as usize;
        let mine = self.mine(block);
        if group.header.load(Ordering::Acquire) != mine && self.enter(group, mine) {
            // Another block uses the group: leave it to the locked path.
            let shared = (self.generation << 32) | SHARED;
            group.header.store(shared, Ordering::Release);
            return false;
        }
        let valid = group.valid[0].load(Ordering::Relaxed);
        let run_bits = group.run_bits.load(Ordering::Relaxed);
        let lead_slot = (first[lead] % GROUP as u64) as usize;
        let half = lead_slot / HALF;
        let half_bits = (u64::MAX >> HALF) << (half * HALF);
        let in_half = consecutive && bits & !half_bits == 0;
        let start = record(lead).wrapping_sub(((lead_slot % HALF) as u64) << self.tid_shift);
        if in_half && valid & bits == 0 && run_bits & bits == bits {
            // All given by the half's run, which is linear like this access: comparing the
            // lead lane compares them all.
            let r = self.run_record(group, lead_slot);
            if same(lead, r) {
                return true;
            }
            // This thread's reads of the whole run become its writes (a read-modify-write of
            // one's own elements): one store, when no other access is recorded there.
            let (read, write) = ((start & !3) | READ, (start & !3) | WRITE);
            let run = group.runs[half].load(Ordering::Relaxed);
            let alone = group.valid[1].load(Ordering::Relaxed) & bits == 0;
            if start == write && run == read && run_bits & half_bits == bits && alone {
                group.runs[half].store(write, Ordering::Relaxed);
                return true;
            }
            return false;
        }
        if (valid | run_bits) & bits == 0 {
            if in_half && run_bits & half_bits == 0 {
                group.runs[half].store(start, Ordering::Relaxed);
                group.run_bits.store(run_bits | bits, Ordering::Release);
            } else {
                let mut m = lanes;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let at = (first[l] % GROUP as u64) as usize;
                    let r = record(l);
                    for w in &self.words[2 * GROUP * g + at..2 * GROUP * g + at + count as usize] {
                        w.store(r, Ordering::Relaxed);
                    }
                }
                group.valid[0].store(valid | bits, Ordering::Release);
            }
            true
        } else if (valid | run_bits) & bits == bits {
            let mut m = lanes;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                let at = (first[l] % GROUP as u64) as usize;
                for slot in at..at + count as usize {
                    let r = if valid & (1 << slot) != 0 {
                        self.words[2 * GROUP * g + slot].load(Ordering::Relaxed)
                    } else {
                        self.run_record(group, slot)
                    };
                    if !same(l, r) {
                        return false;
                    }
                }
            }
            true
        } else {
            false
        }
    }

    /// The slow half of [`Self::update`] when the group is not the caller's own: claims a
    /// stale group for the caller (false), or takes the lock of a group another block uses,
    /// making it shared (true).
    #[cold]
    #[inline(never)]
    fn enter(&self, group: &Group, mine: u64) -> bool {
        let generation = self.generation << 32;
        loop {
            let h = group.header.load(Ordering::Acquire);
            if h == mine {
                return false;
            }
            let stale = h & !STATE != generation;
            let next = match h & STATE {
                _ if stale => generation | CLEARING,
                CLEARING | LOCKED => {
                    std::hint::spin_loop();
                    continue;
                }
                _ => generation | LOCKED,
            };
            if group
                .header
                .compare_exchange_weak(h, next, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            if !stale {
                return true;
            }
            for v in group.valid.iter().chain([&group.run_bits]) {
                v.store(0, Ordering::Relaxed);
            }
            group.header.store(mine, Ordering::Release);
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &Shadow, granule: u64, block: u64, to: [u64; 2]) -> [u64; 2] {
        let seen = std::cell::Cell::new([0; 2]);
        s.update::<()>(granule, block, |old| {
            seen.set(old);
            Ok(Some(to))
        })
        .unwrap();
        seen.get()
    }

    #[test]
    fn generations_owners_and_sharing() {
        let mut s = Shadow::new(1000).unwrap();
        s.next_generation(16);
        assert_eq!(set(&s, 3, 7, [11, 12]), [0, 0]);
        assert_eq!(set(&s, 3, 7, [13, 0]), [11, 12]);
        // Another block shares the group, then the owner still sees its records.
        assert_eq!(set(&s, 4, 8, [21, 0]), [0, 0]);
        assert_eq!(set(&s, 3, 7, [13, 14]), [13, 0]);
        assert_eq!(set(&s, 249, 9, [31, 0]), [0, 0]);
        // A new launch sees nothing of the old one.
        s.next_generation(16);
        assert_eq!(set(&s, 3, 8, [1, 2]), [0, 0]);
        assert_eq!(set(&s, 4, 8, [1, 2]), [0, 0]);
        // Out of range: nothing happens.
        assert_eq!(set(&s, 1 << 40, 1, [5, 5]), [0, 0]);
    }

    #[test]
    fn warps_store_runs_that_single_accesses_read() {
        let mut s = Shadow::new(4096).unwrap();
        s.next_generation(16);
        let mut first = [0u64; 32];
        for (l, f) in first.iter_mut().enumerate() {
            *f = 64 + 32 + l as u64;
        }
        let record = |l: usize| 0x100 + ((l as u64) << 16);
        let w = |lanes: u32, first: [u64; 32], linear: bool| WarpGranules {
            lanes,
            first,
            count: 1,
            linear,
        };
        assert!(s.warp(&w(u32::MAX, first, true), 5, record, |_, _| false));
        // The run answers for every lane, and a repeat changes nothing.
        assert!(s.warp(&w(u32::MAX, first, true), 5, record, |l, r| r == record(l)));
        for l in [0usize, 7, 31] {
            assert_eq!(set(&s, first[l], 5, [9, 0]), [record(l), 0]);
            assert_eq!(set(&s, first[l], 5, [9, 0]), [9, 0]);
        }
        assert_eq!(set(&s, first[8], 5, [9, 0]), [record(8), 0]);
        // Half empty, half not: not the common case.
        let mut mixed = first;
        mixed[0] = 64;
        assert!(!s.warp(&w(u32::MAX, mixed, true), 5, record, |_, _| true));
        // Lanes sharing a granule, or a group another block owns: not either.
        assert!(!s.warp(&w(0b11, [3; 32], false), 5, record, |_, _| true));
        assert!(!s.warp(&w(u32::MAX, first, true), 6, record, |_, _| true));
    }
}
