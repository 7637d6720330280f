//! Cliques whose ranks are separate processes (NCCL's `ncclGetUniqueId` and
//! `ncclCommInitRank`): one process makes a [`UniqueId`], the program hands its bytes to the
//! others however it likes, and each calls [`Communicator::init_rank`] with its rank.
//!
//! On GPUs the id is NCCL's. On the emulator it names a rendezvous folder: for its `k`-th
//! collective each rank writes what it sends (a header line with the operation, element type
//! and lengths, then the elements' bytes) to `k.<rank>.part` (written under another name and
//! renamed, so a reader never sees half a file), waits until every rank's part is there,
//! computes what it receives with the same definition as ranks of one process
//! (`super::received`), and writes `k.<rank>.done`; the rank that finds every `done` removes
//! the collective's files. A rank that waits longer than [`super::RENDEZVOUS_TIMEOUT`] fails
//! naming the ranks it waited for.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cuprum_ir::ScalarType;

use super::{Communicator, Kind, Link, RENDEZVOUS_TIMEOUT, check_shapes, read, received, write};
use crate::BackendKind;
use crate::backend::Backend;
use crate::backend::cuda::nccl;
use crate::context::{CudaContext, Stream};
use crate::error::{Error, Result};

/// The first bytes of an emulated clique's id; the folder's path follows.
const EMULATED: &[u8] = b"cuprum-emulated-clique:";

/// What the ranks of a clique in several processes share to find each other (128 bytes, as
/// NCCL's `ncclUniqueId`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId([u8; 128]);

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UniqueId(..)")
    }
}

impl UniqueId {
    /// A new clique's id for devices of `ctx`'s kind: NCCL's (`ncclGetUniqueId`) on a GPU, a
    /// new rendezvous folder under the system's temporary folder on the emulator.
    pub fn new(ctx: &CudaContext) -> Result<UniqueId> {
        match ctx.backend() {
            BackendKind::Emulator => {
                let dir = tempfile::Builder::new()
                    .prefix("cuprum-clique-")
                    .tempdir()
                    .map_err(|e| Error::Collective {
                        what: format!("could not make a rendezvous folder: {e}"),
                    })?
                    .keep();
                let path = dir.to_string_lossy().into_owned();
                let mut bytes = [0u8; 128];
                if EMULATED.len() + path.len() > bytes.len() {
                    return Err(Error::Collective {
                        what: format!("the rendezvous folder's path `{path}` is too long"),
                    });
                }
                bytes[..EMULATED.len()].copy_from_slice(EMULATED);
                bytes[EMULATED.len()..EMULATED.len() + path.len()].copy_from_slice(path.as_bytes());
                Ok(UniqueId(bytes))
            }
            BackendKind::Cuda => {
                if !nccl::available() {
                    return Err(nccl_missing());
                }
                nccl::unique_id()
                    .map(UniqueId)
                    .map_err(|what| Error::Collective { what })
            }
        }
    }

    /// The id's bytes, to hand to the other processes.
    pub fn to_bytes(&self) -> [u8; 128] {
        self.0
    }

    /// The id another process made, from its bytes.
    pub fn from_bytes(bytes: [u8; 128]) -> UniqueId {
        UniqueId(bytes)
    }

    /// The rendezvous folder of an emulated clique's id.
    fn folder(&self) -> Option<PathBuf> {
        let rest = self.0.strip_prefix(EMULATED)?;
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        std::str::from_utf8(&rest[..end]).ok().map(PathBuf::from)
    }
}

/// The refusal where NCCL cannot be loaded.
pub(super) fn nccl_missing() -> Error {
    Error::Unsupported {
        what: "collectives on GPUs need NCCL, and `libnccl.so.2` was not found: install NCCL \
               (or PyTorch's nvidia-nccl wheel) where the dynamic loader finds it"
            .to_owned(),
    }
}

/// An emulated rank in a clique of processes: the rendezvous folder and how many
/// collectives it has called.
pub(super) struct Files {
    folder: PathBuf,
    calls: AtomicU64,
    rank: usize,
    size: usize,
}

/// A rank that is dropped calls no more collectives: it leaves a `<rank>.closed` marker, and
/// the last rank to close removes the rendezvous folder.
impl Drop for Files {
    fn drop(&mut self) {
        let closed = |r: usize| self.folder.join(format!("{r}.closed"));
        if std::fs::write(closed(self.rank), b"").is_ok()
            && (0..self.size).all(|r| closed(r).exists())
        {
            let _ = std::fs::remove_dir_all(&self.folder);
        }
    }
}

impl Communicator {
    /// Rank `rank` of a clique of `size` ranks, one per process, on `stream`'s device
    /// (NCCL's `ncclCommInitRank`): every process calls it with the same `id` (made by one of
    /// them with [`UniqueId::new`]) and its own rank.
    pub fn init_rank(stream: &Stream, size: usize, id: &UniqueId, rank: usize) -> Result<Self> {
        if rank >= size {
            return Err(Error::Collective {
                what: format!("rank {rank} of a clique of {size}"),
            });
        }
        let link = match &stream.context().inner.backend {
            Backend::Emu(_) => {
                let folder = id.folder().ok_or_else(|| Error::Collective {
                    what: "the id is not an emulated clique's (made by UniqueId::new on a GPU?)"
                        .to_owned(),
                })?;
                if !folder.is_dir() {
                    return Err(Error::Collective {
                        what: format!("the rendezvous folder `{}` is gone", folder.display()),
                    });
                }
                Link::Files(Files {
                    folder,
                    calls: AtomicU64::new(0),
                    rank,
                    size,
                })
            }
            Backend::Cuda(device) => {
                if !nccl::available() {
                    return Err(nccl_missing());
                }
                let comm = nccl::init_rank(device, size, id.0, rank)
                    .map_err(|what| Error::Collective { what })?;
                Link::Nccl(comm)
            }
        };
        Ok(Communicator {
            rank,
            size,
            stream: stream.clone(),
            link,
        })
    }
}

/// What a rank calls, as its part's header names it: the operation, its reduction and root.
fn call_text(kind: Kind) -> String {
    let (op, root) = match kind {
        Kind::AllReduce(op) | Kind::ReduceScatter(op) => (format!("{op:?}"), 0),
        Kind::AllGather => ("-".to_owned(), 0),
        Kind::Broadcast { root } => ("-".to_owned(), root),
    };
    format!("{} {op} {root}", kind.name())
}

/// A part read back: its header's fields (what was called, the element type, the lengths)
/// and its elements.
struct ReadPart {
    call: String,
    elem: String,
    send: usize,
    recv: usize,
    values: Vec<u64>,
}

fn parse(bytes: &[u8], size: usize) -> Option<ReadPart> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..end]).ok()?;
    let mut fields = header.rsplitn(4, ' ');
    let (recv, send, elem, call) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let values = bytes[end + 1..]
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect();
    Some(ReadPart {
        call: call.to_owned(),
        elem: elem.to_owned(),
        send: send.parse().ok()?,
        recv: recv.parse().ok()?,
        values,
    })
}

fn io(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let what = format!("could not {what} `{}`", path.display());
    move |e| Error::Collective {
        what: format!("{what}: {e}"),
    }
}

impl Files {
    /// Performs this rank's side of collective `kind` (see the module docs).
    pub(super) fn call(
        &self,
        comm: &Communicator,
        kind: Kind,
        elem: ScalarType,
        send: (u64, usize),
        recv: (u64, usize),
    ) -> Result<()> {
        let (rank, size) = (comm.rank, comm.size);
        let k = self.calls.fetch_add(1, Ordering::Relaxed);
        let part = |r: usize| self.folder.join(format!("{k}.{r}.part"));
        let done = |r: usize| self.folder.join(format!("{k}.{r}.done"));
        let values = read(&comm.stream, elem, send.0, send.1)?;
        let bytes_per = elem.size_bytes() as usize;
        let call = call_text(kind);
        let mut bytes = format!("{call} {elem} {} {}\n", send.1, recv.1).into_bytes();
        for v in &values {
            bytes.extend_from_slice(&v.to_le_bytes()[..bytes_per]);
        }
        let staging = self.folder.join(format!("{k}.{rank}.writing"));
        std::fs::write(&staging, &bytes).map_err(io("write", &staging))?;
        std::fs::rename(&staging, part(rank)).map_err(io("rename", &staging))?;
        let start = Instant::now();
        let mut parts: Vec<Option<ReadPart>> = (0..size).map(|_| None).collect();
        loop {
            for (r, slot) in parts.iter_mut().enumerate() {
                if slot.is_none()
                    && let Ok(b) = std::fs::read(part(r))
                {
                    *slot = Some(parse(&b, bytes_per).ok_or_else(|| Error::Collective {
                        what: format!("rank {r}'s part of collective {k} is not one"),
                    })?);
                }
            }
            if parts.iter().all(Option::is_some) {
                break;
            }
            if start.elapsed() > RENDEZVOUS_TIMEOUT {
                let missing: Vec<usize> = (0..size).filter(|&r| parts[r].is_none()).collect();
                return Err(Error::Collective {
                    what: format!(
                        "rank {rank} waited {} s for ranks {missing:?} (other processes) to \
                         call {}",
                        RENDEZVOUS_TIMEOUT.as_secs(),
                        kind.name()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let parts: Vec<ReadPart> = parts.into_iter().flatten().collect();
        if let Some(other) = parts.iter().find(|p| p.call != call) {
            return Err(Error::Collective {
                what: format!(
                    "collective {k} is `{}` on one rank but `{call}` on rank {rank}",
                    other.call
                ),
            });
        }
        if let Some(other) = parts.iter().find(|p| p.elem != elem.to_string()) {
            return Err(Error::Collective {
                what: format!(
                    "{} of `{}` on one rank but `{elem}` on rank {rank}",
                    kind.name(),
                    other.elem
                ),
            });
        }
        let shapes: Vec<_> = parts.iter().map(|p| (elem, p.send, p.recv)).collect();
        let outcome = check_shapes(kind, &shapes).and_then(|()| {
            let sends: Vec<Vec<u64>> = parts.into_iter().map(|p| p.values).collect();
            match received(kind, elem, &sends, rank)? {
                Some(v) => write(&comm.stream, elem, recv.0, &v),
                None => Ok(()),
            }
        });
        std::fs::write(done(rank), b"").map_err(io("write", &done(rank)))?;
        if (0..size).all(|r| done(r).exists()) {
            for r in 0..size {
                let _ = std::fs::remove_file(part(r));
                let _ = std::fs::remove_file(done(r));
            }
        }
        outcome
    }
}
