//! Device memory of the emulated GPU: a flat 64-bit address space of separate allocations.
//!
//! Why it looks like this:
//! * Allocations get 256-byte-aligned addresses far from zero, with an unmapped gap after each,
//!   never reused, so an overrun or a stale pointer hits no other buffer and is reported.
//! * Bytes live in `AtomicU64` words accessed with `Relaxed` ordering, so blocks running on
//!   several CPU threads can read and write the same memory, even racily, without Rust UB.
//!   Sub-word stores are compare-and-swap loops on the containing word, so they never clobber
//!   neighbouring bytes written by another thread; IR atomics are real atomic read-modify-writes.
//! * A launch takes a snapshot ([`GlobalView`]) of the live allocations, so the interpreter
//!   looks addresses up without taking a lock.
//!
//! New allocations are filled with a poison byte ([`POISON`]), as device memory contents are
//! unspecified: a kernel that reads memory nobody wrote sees garbage, not zeros.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::EmuError;
use crate::shadow::Shadow;

/// The byte new allocations are filled with.
pub const POISON: u8 = 0xCD;
const POISON_WORD: u64 = u64::from_ne_bytes([POISON; 8]);
/// First address handed out.
const FIRST_ADDRESS: u64 = 0x7f00_0000_0000;
/// Alignment of every allocation (as `cudaMalloc`).
pub const ALLOC_ALIGN: u64 = 256;
/// Unmapped bytes left after every allocation.
const GAP: u64 = 1 << 20;
/// Capacity of [`Memory::new`].
pub const DEFAULT_CAPACITY: u64 = 16 << 30;

/// One live allocation: `len` bytes at `base`, stored little-endian in atomic words.
pub(crate) struct Allocation {
    pub(crate) base: u64,
    pub(crate) len: u64,
    words: Box<[AtomicU64]>,
    /// The race tracker's shadow, kept between launches (a launch takes it while it runs).
    pub(crate) shadow: Mutex<Option<Box<Shadow>>>,
}

#[inline(always)]
fn low_mask(size: u32) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (size * 8)) - 1
    }
}

impl Allocation {
    fn new(base: u64, len: u64) -> Result<Self, EmuError> {
        let oom = || EmuError::OutOfMemory {
            requested: len,
            available: 0,
        };
        let n = usize::try_from(len.div_ceil(8)).map_err(|_| oom())?;
        let mut words = Vec::new();
        words.try_reserve_exact(n).map_err(|_| oom())?;
        words.extend((0..n).map(|_| AtomicU64::new(POISON_WORD)));
        Ok(Self {
            base,
            len,
            words: words.into_boxed_slice(),
            shadow: Mutex::new(None),
        })
    }

    /// Loads `size` bytes (1, 2, 4 or 8) at byte offset `off`, which the caller has checked is
    /// in range and aligned to `size`; zero-extended.
    #[inline(always)]
    pub(crate) fn load(&self, off: u64, size: u32) -> u64 {
        let word = self.words[(off >> 3) as usize].load(Relaxed);
        if size == 8 {
            word
        } else {
            (word >> ((off & 7) * 8)) & low_mask(size)
        }
    }

    /// Stores the low `size` bytes of `value` at `off` (checked in range and aligned).
    #[inline(always)]
    pub(crate) fn store(&self, off: u64, size: u32, value: u64) {
        let word = &self.words[(off >> 3) as usize];
        if size == 8 {
            word.store(value, Relaxed);
        } else {
            let shift = (off & 7) * 8;
            let mask = low_mask(size) << shift;
            let bits = (value << shift) & mask;
            let mut cur = word.load(Relaxed);
            loop {
                let new = (cur & !mask) | bits;
                match word.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                    Ok(_) => break,
                    Err(seen) => cur = seen,
                }
            }
        }
    }

    /// Atomically replaces the `size`-byte value `v` at `off` by `f(v)` and returns `v`.
    #[inline]
    pub(crate) fn rmw(&self, off: u64, size: u32, mut f: impl FnMut(u64) -> u64) -> u64 {
        let word = &self.words[(off >> 3) as usize];
        let shift = (off & 7) * 8;
        let mask = low_mask(size) << shift;
        let mut cur = word.load(Relaxed);
        loop {
            let old = (cur & mask) >> shift;
            let new_part = (f(old) << shift) & mask;
            let new = (cur & !mask) | new_part;
            if new == cur {
                return old;
            }
            match word.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                Ok(_) => return old,
                Err(seen) => cur = seen,
            }
        }
    }

    fn read_bytes(&self, mut off: u64, out: &mut [u8]) {
        let mut rest = out;
        while !rest.is_empty() {
            let in_word = (off & 7) as usize;
            let take = (8 - in_word).min(rest.len());
            let word = self.words[(off >> 3) as usize].load(Relaxed).to_le_bytes();
            let (head, tail) = rest.split_at_mut(take);
            head.copy_from_slice(&word[in_word..in_word + take]);
            rest = tail;
            off += take as u64;
        }
    }

    fn write_bytes(&self, mut off: u64, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let in_word = (off & 7) as usize;
            let take = (8 - in_word).min(rest.len());
            let word = &self.words[(off >> 3) as usize];
            if take == 8 {
                let mut b = [0u8; 8];
                b.copy_from_slice(&rest[..8]);
                word.store(u64::from_le_bytes(b), Relaxed);
            } else {
                let mut b = [0u8; 8];
                b[in_word..in_word + take].copy_from_slice(&rest[..take]);
                let bits = u64::from_le_bytes(b);
                let mask = low_mask(take as u32) << (in_word * 8);
                let mut cur = word.load(Relaxed);
                loop {
                    let new = (cur & !mask) | bits;
                    match word.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                        Ok(_) => break,
                        Err(seen) => cur = seen,
                    }
                }
            }
            rest = &rest[take..];
            off += take as u64;
        }
    }

    fn fill_bytes(&self, off: u64, len: u64, byte: u8) {
        let mut off = off;
        let end = off + len;
        // Unaligned head and tail go through the byte path; whole words are stored directly.
        while off < end && off & 7 != 0 {
            self.store(off, 1, byte as u64);
            off += 1;
        }
        let word = u64::from_ne_bytes([byte; 8]);
        while off + 8 <= end {
            self.words[(off >> 3) as usize].store(word, Relaxed);
            off += 8;
        }
        while off < end {
            self.store(off, 1, byte as u64);
            off += 1;
        }
    }
}

struct State {
    allocs: BTreeMap<u64, Arc<Allocation>>,
    next: u64,
    /// First address past the window this memory hands addresses out of.
    window_end: u64,
    in_use: u64,
    capacity: u64,
}

/// Device memory of the emulated GPU: a flat 64-bit address space. Thread-safe (`&self`
/// methods), `Send + Sync`.
pub struct Memory {
    state: RwLock<State>,
}

impl Default for Memory {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.read_state();
        f.debug_struct("Memory")
            .field("allocations", &s.allocs.len())
            .field("bytes_in_use", &s.in_use)
            .field("capacity", &s.capacity)
            .finish()
    }
}

impl Memory {
    /// An empty device memory of [`DEFAULT_CAPACITY`] bytes.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// An empty device memory that refuses allocations beyond `capacity` live bytes.
    pub fn with_capacity(capacity: u64) -> Self {
        Self::with_address_window(FIRST_ADDRESS, u64::MAX - FIRST_ADDRESS, capacity)
    }

    /// An empty device memory whose allocations all lie in `[first, first + window)` and that
    /// refuses allocations beyond `capacity` live bytes, or once the window is used up
    /// (addresses are never reused). Memories given disjoint windows never hand out one
    /// address twice, so an address names one allocation of one memory (the runtime gives each
    /// emulated context its own window, as a GPU process has one address space).
    pub fn with_address_window(first: u64, window: u64, capacity: u64) -> Self {
        let first = first.next_multiple_of(ALLOC_ALIGN).max(ALLOC_ALIGN);
        Self {
            state: RwLock::new(State {
                allocs: BTreeMap::new(),
                next: first,
                window_end: first.saturating_add(window),
                in_use: 0,
                capacity,
            }),
        }
    }

    fn read_state(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_state(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates `bytes` bytes, 256-byte aligned, filled with [`POISON`]. A zero-byte
    /// allocation gets its own address too (every access to it is out of bounds).
    pub fn alloc(&self, bytes: usize) -> Result<u64, EmuError> {
        let len = bytes as u64;
        let mut s = self.write_state();
        let available = s.capacity.saturating_sub(s.in_use);
        let oom = EmuError::OutOfMemory {
            requested: len,
            available,
        };
        if len > available {
            return Err(oom);
        }
        let base = s.next;
        let next = base
            .checked_add(len.max(1))
            .and_then(|end| end.checked_next_multiple_of(ALLOC_ALIGN))
            .and_then(|end| end.checked_add(GAP))
            .filter(|&end| end <= s.window_end);
        let Some(next) = next else {
            return Err(oom);
        };
        let alloc = Allocation::new(base, len).map_err(|_| oom)?;
        s.next = next;
        s.in_use += len;
        s.allocs.insert(base, Arc::new(alloc));
        Ok(base)
    }

    /// Frees the allocation starting at `addr`. Its addresses are never handed out again.
    pub fn free(&self, addr: u64) -> Result<(), EmuError> {
        let mut s = self.write_state();
        match s.allocs.remove(&addr) {
            Some(a) => {
                s.in_use -= a.len;
                Ok(())
            }
            None => Err(EmuError::InvalidFree { address: addr }),
        }
    }

    /// Number of live allocations.
    pub fn allocation_count(&self) -> usize {
        self.read_state().allocs.len()
    }

    /// Bytes in live allocations.
    pub fn bytes_in_use(&self) -> u64 {
        self.read_state().in_use
    }

    /// The allocation holding `[addr, addr + len)`, and the offset of `addr` in it.
    fn find(
        &self,
        op: &'static str,
        addr: u64,
        len: usize,
    ) -> Result<(Arc<Allocation>, u64), EmuError> {
        let len = len as u64;
        let err = || EmuError::HostOutOfBounds {
            op,
            address: addr,
            len,
        };
        let s = self.read_state();
        let (_, a) = s.allocs.range(..=addr).next_back().ok_or_else(err)?;
        let off = addr - a.base;
        match off.checked_add(len) {
            Some(end) if end <= a.len => Ok((Arc::clone(a), off)),
            _ => Err(err()),
        }
    }

    /// Copies `bytes` into device memory at `addr` (which may point inside an allocation).
    pub fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), EmuError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let (a, off) = self.find("write", addr, bytes.len())?;
        a.write_bytes(off, bytes);
        Ok(())
    }

    /// Copies device memory at `addr` into `out`.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), EmuError> {
        if out.is_empty() {
            return Ok(());
        }
        let (a, off) = self.find("read", addr, out.len())?;
        a.read_bytes(off, out);
        Ok(())
    }

    /// Sets `len` bytes at `addr` to `byte`.
    pub fn fill(&self, addr: u64, len: usize, byte: u8) -> Result<(), EmuError> {
        if len == 0 {
            return Ok(());
        }
        let (a, off) = self.find("fill", addr, len)?;
        a.fill_bytes(off, len as u64, byte);
        Ok(())
    }

    /// Copies `len` bytes from `src` to `dst`; the ranges may overlap (as `memmove`).
    pub fn copy(&self, dst: u64, src: u64, len: usize) -> Result<(), EmuError> {
        if len == 0 {
            return Ok(());
        }
        let (s, soff) = self.find("copy (source)", src, len)?;
        let (d, doff) = self.find("copy (destination)", dst, len)?;
        // Bounded chunks keep the staging buffer small; copying backwards when the destination
        // is above an overlapping source keeps memmove semantics.
        const CHUNK: usize = 1 << 16;
        let mut buf = vec![0u8; CHUNK.min(len)];
        let forward = !(Arc::ptr_eq(&s, &d) && doff > soff);
        let mut done = 0usize;
        while done < len {
            let n = CHUNK.min(len - done);
            let start = if forward { done } else { len - done - n } as u64;
            s.read_bytes(soff + start, &mut buf[..n]);
            d.write_bytes(doff + start, &buf[..n]);
            done += n;
        }
        Ok(())
    }

    /// A lock-free view of the live allocations, for one launch.
    pub(crate) fn snapshot(&self) -> GlobalView {
        GlobalView {
            allocs: self.read_state().allocs.values().cloned().collect(),
        }
    }
}

/// The allocations live when a launch started, sorted by address. Buffers freed by another
/// host thread during the launch stay readable through it (the launch holds them).
pub(crate) struct GlobalView {
    allocs: Vec<Arc<Allocation>>,
}

impl GlobalView {
    /// The allocation that holds `[addr, addr + size)` and the offset of `addr` in it. `hint`
    /// remembers the last allocation found, which is usually the next one asked for; after a
    /// hit it is the allocation's index in the view.
    #[inline(always)]
    pub(crate) fn locate(
        &self,
        addr: u64,
        size: u64,
        hint: &mut usize,
    ) -> Option<(&Allocation, u64)> {
        if let Some(a) = self.allocs.get(*hint) {
            let off = addr.wrapping_sub(a.base);
            if off < a.len && a.len - off >= size {
                return Some((a, off));
            }
        }
        self.locate_slow(addr, size, hint)
    }

    #[inline(never)]
    fn locate_slow(&self, addr: u64, size: u64, hint: &mut usize) -> Option<(&Allocation, u64)> {
        let i = self
            .allocs
            .partition_point(|a| a.base <= addr)
            .checked_sub(1)?;
        let a = &self.allocs[i];
        let off = addr - a.base;
        if off < a.len && a.len - off >= size {
            *hint = i;
            Some((a, off))
        } else {
            None
        }
    }

    /// Allocation `index` of the view.
    pub(crate) fn get(&self, index: usize) -> Option<&Allocation> {
        self.allocs.get(index).map(|a| &**a)
    }

    /// How many allocations the view holds.
    pub(crate) fn len(&self) -> usize {
        self.allocs.len()
    }

    /// Whether `[addr, addr + len)` lies inside one allocation.
    pub(crate) fn contains(&self, addr: u64, len: u64) -> bool {
        let mut hint = 0;
        self.locate(addr, len, &mut hint).is_some()
    }
}
