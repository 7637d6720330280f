//! `cp.async` as the hardware runs it: asynchronously. A copy reads its global bytes when it
//! is issued (the source must not change until it completes, so reading early is one of its
//! executions) and writes shared memory only when its thread waits for it: at a
//! `cp.async.wait_group N` for every group but the `N` most recent, at `cp.async.wait_all`,
//! when a `cp.async.mbarrier.arrive` of the thread's copies would fire, or when the thread
//! exits. Until then the shared bytes hold what they held, so a kernel that reads a tile
//! without waiting for its copy (or waits for the wrong group) reads stale data on the
//! emulator too, instead of the right data by luck; a barrier does not complete copies, as it
//! does not on the GPU.

use std::collections::VecDeque;

/// One 8-byte (or smaller) piece of a copy, waiting to land in shared memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Piece {
    /// The shared address the piece goes to, and its size in bytes.
    pub(crate) at: u32,
    pub(crate) bytes: u32,
    pub(crate) value: u64,
    /// The whole copy's destination and size, for fault messages.
    pub(crate) copy_dst: u64,
    pub(crate) copy_size: u32,
}

/// One lane's copies: those not yet committed, and the committed groups, oldest first.
#[derive(Clone, Debug, Default)]
struct LaneQueue {
    open: Vec<Piece>,
    groups: VecDeque<Vec<Piece>>,
}

/// A warp's copies in flight, per lane.
#[derive(Clone, Debug, Default)]
pub(crate) struct Queues {
    lanes: Vec<LaneQueue>,
    /// Whether any lane has a copy in flight (so that waits cost nothing otherwise).
    busy: bool,
}

impl Queues {
    /// Forgets everything (a new block).
    pub(crate) fn reset(&mut self) {
        if self.busy {
            self.lanes
                .iter_mut()
                .for_each(|q| *q = LaneQueue::default());
            self.busy = false;
        }
    }

    /// Lane `lane`'s new piece, in its open group.
    pub(crate) fn issue(&mut self, lane: u32, piece: Piece) {
        if self.lanes.is_empty() {
            self.lanes = vec![LaneQueue::default(); 32];
        }
        self.lanes[lane as usize].open.push(piece);
        self.busy = true;
    }

    /// `cp.async.commit_group` for the lanes of `mask` (an empty group where nothing was
    /// issued, as on the GPU).
    pub(crate) fn commit(&mut self, mask: u32) {
        if !self.busy {
            return;
        }
        for l in crate::access::lanes_of(mask) {
            let q = &mut self.lanes[l as usize];
            let group = std::mem::take(&mut q.open);
            q.groups.push_back(group);
        }
    }

    /// The pieces lane `lane` must complete to leave at most `pending` committed groups in
    /// flight (`None`: every copy, committed or not), oldest first, taken out of the queue.
    pub(crate) fn complete(&mut self, lane: u32, pending: Option<u32>) -> Vec<Piece> {
        if !self.busy {
            return Vec::new();
        }
        let q = &mut self.lanes[lane as usize];
        let mut out = Vec::new();
        let keep = pending.map_or(0, |p| p as usize);
        while q.groups.len() > keep {
            if let Some(g) = q.groups.pop_front() {
                out.extend(g);
            }
        }
        if pending.is_none() {
            out.append(&mut q.open);
        }
        out
    }
}
