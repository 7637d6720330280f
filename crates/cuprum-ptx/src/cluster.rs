//! Thread-block clusters (sm_90): the entry's cluster shape, the cluster's special
//! registers, its barrier, the mbarrier-initialisation fence and remote mbarrier arrivals.
//! Kept apart from `emit` because each has a form for targets without clusters.
//!
//! A kernel that declares a cluster ([`cuprum_ir::Kernel::cluster`]) needs sm_90; its entry
//! says `.explicitcluster` and `.reqnctapercluster`, so a plain launch of it runs clusters of
//! that shape. A kernel without one runs clusters of one block, which is what sm_80 code
//! means by the same statements: there the specials are constants (or the block's own
//! indices), the cluster barrier is the block's barrier at the wait (an arrival alone orders
//! nothing a later `bar.sync` does not), and the fence is empty. A remote arrival, a
//! multicast copy and distributed shared memory (`mapa` with `ld`/`st.shared::cluster`) have
//! no sm_80 form ([`PtxError::Unsupported`]).

use std::fmt::Write as _;

use cuprum_ir::{Dim, Kernel, ScalarType, Special, Value};

use crate::PtxError;
use crate::Target;
use crate::emit::{KernelWriter, ins, store_type};
use crate::regs::mem_type;
use crate::regs::{Class, Reg};

/// The entry's cluster directives, if the kernel declares a cluster.
pub(crate) fn entry_directives(
    kernel: &Kernel,
    target: Target,
    out: &mut String,
) -> Result<(), PtxError> {
    let Some((x, y, z)) = kernel.cluster else {
        return Ok(());
    };
    if target == Target::Sm80 {
        return Err(PtxError::Unsupported {
            kernel: kernel.name.clone(),
            what: format!(
                "a cluster of ({x}, {y}, {z}) blocks on sm_80 (thread-block clusters need \
                 compute capability 9.0)"
            ),
        });
    }
    let _ = writeln!(out, ".explicitcluster");
    let _ = writeln!(out, ".reqnctapercluster {x}, {y}, {z}");
    Ok(())
}

/// Whether `s` is one of the cluster's specials.
pub(crate) fn is_cluster_special(s: Special) -> bool {
    matches!(
        s,
        Special::ClusterCtaRank
            | Special::ClusterCtaIdx(_)
            | Special::ClusterDim(_)
            | Special::ClusterIdx(_)
            | Special::ClusterCount(_)
    )
}

fn dim(d: Dim) -> &'static str {
    match d {
        Dim::X => "x",
        Dim::Y => "y",
        Dim::Z => "z",
    }
}

impl KernelWriter<'_> {
    /// `d = s` for a cluster special ([`is_cluster_special`]).
    pub(crate) fn cluster_special(&mut self, d: Reg, s: Special) {
        if self.target == Target::Sm80 {
            // A cluster of one block.
            match s {
                Special::ClusterCtaRank | Special::ClusterCtaIdx(_) => ins!(self, "mov.u32 {d}, 0"),
                Special::ClusterDim(_) => ins!(self, "mov.u32 {d}, 1"),
                Special::ClusterIdx(x) => ins!(self, "mov.u32 {d}, %ctaid.{}", dim(x)),
                Special::ClusterCount(x) => ins!(self, "mov.u32 {d}, %nctaid.{}", dim(x)),
                _ => {}
            }
            return;
        }
        match s {
            Special::ClusterCtaRank => ins!(self, "mov.u32 {d}, %cluster_ctarank"),
            Special::ClusterCtaIdx(x) => ins!(self, "mov.u32 {d}, %cluster_ctaid.{}", dim(x)),
            Special::ClusterDim(x) => ins!(self, "mov.u32 {d}, %cluster_nctaid.{}", dim(x)),
            Special::ClusterIdx(x) => ins!(self, "mov.u32 {d}, %clusterid.{}", dim(x)),
            Special::ClusterCount(x) => ins!(self, "mov.u32 {d}, %nclusterid.{}", dim(x)),
            _ => {}
        }
    }

    /// `barrier.cluster.arrive` (`wait: false`) or `barrier.cluster.wait` (`wait: true`).
    pub(crate) fn cluster_barrier(&mut self, wait: bool) {
        match (self.target, wait) {
            (Target::Sm80, false) => {}
            (Target::Sm80, true) => ins!(self, "bar.sync 0"),
            (_, false) => ins!(self, "barrier.cluster.arrive.release.aligned"),
            (_, true) => ins!(self, "barrier.cluster.wait.acquire.aligned"),
        }
    }

    /// `fence.mbarrier_init.release.cluster` (nothing on sm_80: no other block sees the
    /// barriers).
    pub(crate) fn fence_mbarrier_init(&mut self) {
        if self.target != Target::Sm80 {
            ins!(self, "fence.mbarrier_init.release.cluster");
        }
    }

    /// One arrival on the mbarrier at `addr` of the cluster's block `rank`.
    pub(crate) fn arrive_cluster(&mut self, addr: Value, rank: Value) -> Result<(), PtxError> {
        if self.target == Target::Sm80 {
            return Err(self.unsupported(
                "a remote mbarrier arrival on sm_80 (thread-block clusters need compute \
                 capability 9.0)",
            ));
        }
        let (a, r) = (self.reg(addr), self.reg(rank));
        let remote = self.tmp(Class::B32);
        ins!(self, "mapa.shared::cluster.u32 {remote}, {a}, {r}");
        ins!(self, "mbarrier.arrive.shared::cluster.b64 _, [{remote}]");
        Ok(())
    }

    /// `mapa.shared::cluster`: the address of `addr` in the shared memory of the cluster's
    /// block `rank`, for a distributed shared-memory access (`what` names it for sm_80).
    fn map_rank(&mut self, addr: Value, rank: Value, what: &str) -> Result<Reg, PtxError> {
        if self.target == Target::Sm80 {
            return Err(self.unsupported(format!(
                "{what} of another block's shared memory on sm_80 (distributed shared memory \
                 needs compute capability 9.0)"
            )));
        }
        let (a, r) = (self.reg(addr), self.reg(rank));
        let remote = self.tmp(Class::B32);
        ins!(self, "mapa.shared::cluster.u32 {remote}, {a}, {r}");
        Ok(remote)
    }

    /// `result = ` the `ty` at `addr` of the cluster's block `rank` (`ld.shared::cluster`).
    pub(crate) fn cluster_load(
        &mut self,
        result: Value,
        ty: ScalarType,
        addr: Value,
        rank: Value,
    ) -> Result<(), PtxError> {
        let remote = self.map_rank(addr, rank, "a load")?;
        let d = self.reg(result);
        if ty == ScalarType::Bool {
            let t = self.tmp(Class::B32);
            ins!(self, "ld.shared::cluster.u8 {t}, [{remote}]");
            ins!(self, "setp.ne.u32 {d}, {t}, 0");
        } else {
            ins!(self, "ld.shared::cluster.{} {d}, [{remote}]", mem_type(ty));
        }
        Ok(())
    }

    /// Stores `value` at `addr` of the cluster's block `rank` (`st.shared::cluster`).
    pub(crate) fn cluster_store(
        &mut self,
        addr: Value,
        rank: Value,
        value: Value,
    ) -> Result<(), PtxError> {
        let remote = self.map_rank(addr, rank, "a store")?;
        let (v, ty) = (self.reg(value), self.ty(value));
        if ty == ScalarType::Bool {
            let t = self.tmp(Class::B32);
            ins!(self, "selp.u32 {t}, 1, 0, {v}");
            ins!(self, "st.shared::cluster.u8 [{remote}], {t}");
        } else {
            ins!(
                self,
                "st.shared::cluster.{} [{remote}], {v}",
                store_type(ty)
            );
        }
        Ok(())
    }
}
