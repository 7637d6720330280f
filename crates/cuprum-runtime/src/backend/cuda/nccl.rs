//! NCCL on GPUs for `crate::collective`, through cudarc's bindings, which load `libnccl`
//! when first used: nothing NCCL is needed to build, and a process without it gets a typed
//! error ([`available`] is asked first, so cudarc's loader never panics).

use std::ffi::{c_int, c_void};

use cudarc::nccl::{result, sys};
use cuprum_ir::ScalarType;

use super::streams::CudaStream;
use super::{CudaDevice, bind};
use crate::collective::ReduceOp;

/// One rank's NCCL communicator; destroyed when dropped.
pub(crate) struct NcclComm {
    raw: sys::ncclComm_t,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a time per
// communicator, which `crate::collective` keeps (a communicator's calls take `&self` but the
// runtime issues them under the caller's borrow of one rank, and NCCL serializes per
// communicator internally for its enqueue).
unsafe impl Send for NcclComm {}
// SAFETY: as above.
unsafe impl Sync for NcclComm {}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // SAFETY: made by `ncclCommInitAll`, destroyed once.
        let _ = unsafe { result::comm_destroy(self.raw) };
    }
}

/// Whether the NCCL library can be loaded.
pub(crate) fn available() -> bool {
    // SAFETY: only looks for the library.
    unsafe { sys::is_culib_present() }
}

/// One communicator per device, rank `i` on `devices[i]` (`ncclCommInitAll`).
pub(crate) fn init_all(devices: &[&CudaDevice]) -> Result<Vec<NcclComm>, String> {
    let list: Vec<c_int> = devices.iter().map(|d| d.device as c_int).collect();
    let mut raw: Vec<sys::ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
    let n = c_int::try_from(devices.len()).map_err(|_| "too many ranks".to_owned())?;
    // SAFETY: `raw` has room for `n` communicators, `list` holds `n` device ordinals.
    unsafe { result::comm_init_all(raw.as_mut_ptr(), n, list.as_ptr()) }
        .map_err(|e| format!("ncclCommInitAll failed: {e:?}"))?;
    Ok(raw.into_iter().map(|raw| NcclComm { raw }).collect())
}

/// A new clique's id (`ncclGetUniqueId`), as bytes.
pub(crate) fn unique_id() -> Result<[u8; 128], String> {
    let id = result::get_uniqueid().map_err(|e| format!("ncclGetUniqueId failed: {e:?}"))?;
    Ok(id.internal.map(|c| c as u8))
}

/// Rank `rank` of a clique of `size` processes with id `id` on `device` (`ncclCommInitRank`).
pub(crate) fn init_rank(
    device: &CudaDevice,
    size: usize,
    id: [u8; 128],
    rank: usize,
) -> Result<NcclComm, String> {
    let (n, r) = (
        c_int::try_from(size).map_err(|_| "too many ranks".to_owned())?,
        c_int::try_from(rank).map_err(|_| "rank out of range".to_owned())?,
    );
    bind(device.ctx).map_err(|e| format!("{e:?}"))?;
    let id = sys::ncclUniqueId {
        internal: id.map(|b| b as std::ffi::c_char),
    };
    let mut raw: sys::ncclComm_t = std::ptr::null_mut();
    // SAFETY: a valid out pointer; the id is what `ncclGetUniqueId` made in some process.
    unsafe { result::comm_init_rank(&mut raw, n, id, r) }
        .map_err(|e| format!("ncclCommInitRank failed: {e:?}"))?;
    Ok(NcclComm { raw })
}

/// NCCL's element type for `elem`, where it has one: exactly the types
/// `collective::reduces` accepts.
pub(crate) fn data_type(elem: ScalarType) -> Option<sys::ncclDataType_t> {
    use sys::ncclDataType_t as D;
    Some(match elem {
        ScalarType::I8 => D::ncclInt8,
        ScalarType::U8 => D::ncclUint8,
        ScalarType::I32 => D::ncclInt32,
        ScalarType::U32 => D::ncclUint32,
        ScalarType::I64 => D::ncclInt64,
        ScalarType::U64 => D::ncclUint64,
        ScalarType::F16 => D::ncclFloat16,
        ScalarType::BF16 => D::ncclBfloat16,
        ScalarType::F32 => D::ncclFloat32,
        ScalarType::F64 => D::ncclFloat64,
        // A sum of `tf32` values is no `tf32`: collectives take them as `f32` buffers.
        ScalarType::Bool | ScalarType::I16 | ScalarType::U16 | ScalarType::Tf32 => return None,
    })
}

fn red_op(op: ReduceOp) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t as R;
    match op {
        ReduceOp::Sum => R::ncclSum,
        ReduceOp::Prod => R::ncclProd,
        ReduceOp::Max => R::ncclMax,
        ReduceOp::Min => R::ncclMin,
        ReduceOp::Avg => R::ncclAvg,
    }
}

/// What one NCCL call does (counts in elements).
#[derive(Clone, Copy, Debug)]
pub(crate) enum NcclCall {
    AllReduce { op: ReduceOp, count: usize },
    ReduceScatter { op: ReduceOp, recv_count: usize },
    AllGather { send_count: usize },
    Broadcast { root: usize, count: usize },
}

/// Enqueues `call` on `stream` for communicator `comm` of `device`.
///
/// # Safety
/// `send` and `recv` are live allocations of `device` of the sizes `call` implies, ordered
/// for this use on `stream`.
pub(crate) unsafe fn enqueue(
    comm: &NcclComm,
    device: &CudaDevice,
    stream: &CudaStream,
    elem: ScalarType,
    call: NcclCall,
    send: u64,
    recv: u64,
) -> Result<(), String> {
    // A type NCCL has none of is moved as its bytes, which only gathers and broadcasts do
    // (the collective module refuses to reduce it, on every backend).
    let (dtype, scale) = match (data_type(elem), call) {
        (Some(dtype), _) => (dtype, 1),
        (None, NcclCall::AllGather { .. } | NcclCall::Broadcast { .. }) => {
            (sys::ncclDataType_t::ncclUint8, elem.size_bytes() as usize)
        }
        (None, _) => return Err(format!("NCCL reduces no `{elem}` elements")),
    };
    bind(device.ctx).map_err(|e| format!("{e:?}"))?;
    let (s, r) = (send as *const c_void, recv as *mut c_void);
    let st = stream.raw as sys::cudaStream_t;
    // SAFETY: the caller's contract.
    let status = unsafe {
        match call {
            NcclCall::AllReduce { op, count } => {
                result::all_reduce(s, r, count, dtype, red_op(op), comm.raw, st)
            }
            NcclCall::ReduceScatter { op, recv_count } => {
                result::reduce_scatter(s, r, recv_count, dtype, red_op(op), comm.raw, st)
            }
            NcclCall::AllGather { send_count } => {
                result::all_gather(s, r, send_count * scale, dtype, comm.raw, st)
            }
            NcclCall::Broadcast { root, count } => {
                let root = c_int::try_from(root).map_err(|_| "root out of range".to_owned())?;
                result::broadcast(s, r, count * scale, dtype, root, comm.raw, st)
            }
        }
    };
    status.map(drop).map_err(|e| format!("NCCL failed: {e:?}"))
}

/// `ncclGroupStart`.
pub(crate) fn group_start() -> Result<(), String> {
    result::group_start()
        .map(drop)
        .map_err(|e| format!("ncclGroupStart failed: {e:?}"))
}

/// `ncclGroupEnd`.
pub(crate) fn group_end() -> Result<(), String> {
    result::group_end()
        .map(drop)
        .map_err(|e| format!("ncclGroupEnd failed: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NCCL's element types are exactly the types collectives reduce.
    #[test]
    fn nccl_has_exactly_the_reduced_types() {
        for elem in ScalarType::ALL {
            assert_eq!(
                data_type(elem).is_some(),
                crate::collective::reduces(elem),
                "{elem}"
            );
        }
    }
}
