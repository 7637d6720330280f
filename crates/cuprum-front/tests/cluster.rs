//! What the front end makes of cuda-oxide's cluster API: `#[cluster_launch(..)]` as the
//! kernel's cluster shape (and the messages for shapes no GPU launches), the cluster
//! registers and the values derived from them, every spelling of the cluster barrier, the
//! mbarrier-initialisation fence, distributed shared memory (`dsmem_read_u32`,
//! `map_shared_rank{,_mut}` read, written and stepped) and multicast tensor copies. (The
//! kernels run in `crates/cuprum/tests/simt_cluster.rs`.)

use cuprum_front::compile_source;
use cuprum_ir::{Dim, Kernel, ScalarType, Special, Stmt, TmaOp, print_module, validate_module};

fn module(body: &str) -> String {
    format!("mod kernels {{ use super::*; {body} }}")
}

#[track_caller]
fn compile_ok(body: &str) -> cuprum_ir::Module {
    match compile_source(&module(body)) {
        Ok(m) => {
            if let Err(e) = validate_module(&m.ir) {
                panic!("invalid IR: {e}\n{}", print_module(&m.ir));
            }
            m.ir
        }
        Err(e) => panic!("expected to compile, got: {e}"),
    }
}

#[track_caller]
fn compile_err(body: &str) -> String {
    match compile_source(&module(body)) {
        Ok(m) => panic!("expected an error, got IR:\n{}", print_module(&m.ir)),
        Err(e) => e.message,
    }
}

/// The statements of a kernel's body, nested blocks included, in order.
fn stmts(k: &Kernel) -> Vec<Stmt> {
    let mut out = Vec::new();
    k.body.visit(&mut |s| out.push(s.clone()));
    out
}

/// The special registers a kernel reads.
fn specials(k: &Kernel) -> Vec<Special> {
    stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::Def {
                op: cuprum_ir::Op::Special(r),
                ..
            } => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn cluster_launch_declares_the_kernels_cluster_shape() {
    for (attr, want) in [
        ("(4, 1, 1)", (4, 1, 1)),
        ("(2, 2)", (2, 2, 1)),
        ("(8)", (8, 1, 1)),
        ("(1, 2, 4)", (1, 2, 4)),
    ] {
        let m = compile_ok(&format!(
            "#[kernel] #[cluster_launch{attr}] pub fn k(mut out: DisjointSlice<u32>) {{}}"
        ));
        assert_eq!(m.kernels[0].cluster, Some(want), "{attr}");
    }
    // After `#[kernel]` or before it, as cuda-oxide allows; without it, no cluster.
    let m = compile_ok(
        "#[cluster_launch(2, 1, 1)] #[kernel] pub fn a() {}
         #[kernel] pub fn b() {}",
    );
    assert_eq!(m.kernels[0].cluster, Some((2, 1, 1)));
    assert_eq!(m.kernels[1].cluster, None);
}

#[test]
fn cluster_shapes_no_gpu_launches_say_what_to_write() {
    for (attr, says) in [
        ("(3, 3, 1)", "3 x 3 x 1 = 9 blocks is more than the 8"),
        ("(16)", "16 blocks is more than the 8"),
        ("(0, 1, 1)", "at least 1 block along each axis"),
        ("(1, 1, 1, 1)", "takes 1 to 3 block counts, not 4"),
        ("()", "takes 1 to 3 block counts, not 0"),
        ("(n, 1, 1)", "integer literals"),
        ("(2.0)", "integer literals"),
    ] {
        let e = compile_err(&format!(
            "#[kernel] #[cluster_launch{attr}] pub fn k() {{}}"
        ));
        assert!(e.contains(says), "{attr}: {e}");
    }
    let e = compile_err("#[kernel] #[cluster_launch] pub fn k() {}");
    assert!(e.contains("needs the cluster's shape"), "{e}");
}

#[test]
fn the_cluster_registers_and_derived_values_read_the_ir_specials() {
    let m = compile_ok(
        "#[kernel] #[cluster_launch(2, 2, 1)] pub fn k(mut out: DisjointSlice<u32>) {
            let v = cluster::cluster_ctaidX() + cluster::cluster_ctaidY() + cluster::cluster_ctaidZ()
                + cluster::cluster_nctaidX() + cluster::cluster_nctaidY() + cluster::cluster_nctaidZ()
                + cluster::block_rank() + cluster::cluster_size() + cluster::cluster_idx()
                + cluster::num_clusters();
            unsafe { *out.get_unchecked_mut(0) = v };
        }",
    );
    let got = specials(&m.kernels[0]);
    for want in [Dim::X, Dim::Y, Dim::Z]
        .into_iter()
        .flat_map(|d| {
            [
                Special::ClusterCtaIdx(d),
                Special::ClusterDim(d),
                Special::ClusterIdx(d),
                Special::ClusterCount(d),
            ]
        })
        .chain([Special::ClusterCtaRank])
    {
        assert!(got.contains(&want), "{want:?} not read: {got:?}");
    }
}

#[test]
fn every_spelling_of_the_cluster_barrier_is_an_arrival_or_a_wait() {
    let m = compile_ok(
        "#[kernel] #[cluster_launch(2, 1, 1)] pub fn k() {
            cluster::cluster_sync();
            unsafe {
                cluster::barrier_cluster_arrive();
                cluster::barrier_cluster_wait();
                cluster::barrier_cluster_arrive_aligned();
                cluster::barrier_cluster_wait_aligned();
                cluster::barrier_cluster_arrive_relaxed();
                cluster::barrier_cluster_wait();
                cluster::barrier_cluster_arrive_relaxed_aligned();
                cluster::barrier_cluster_wait_aligned();
                barrier::fence_mbarrier_init_release_cluster();
            }
        }",
    );
    let got: Vec<Stmt> = stmts(&m.kernels[0])
        .into_iter()
        .filter(|s| {
            matches!(
                s,
                Stmt::ClusterArrive | Stmt::ClusterWait | Stmt::FenceMbarrierInit
            )
        })
        .collect();
    let mut want = Vec::new();
    for _ in 0..5 {
        want.extend([Stmt::ClusterArrive, Stmt::ClusterWait]);
    }
    want.push(Stmt::FenceMbarrierInit);
    assert_eq!(got, want);
    let e = compile_err("#[kernel] pub fn k() { cluster::cluster_sync(1); }");
    assert!(
        e.contains("`cluster::cluster_sync()` takes no arguments"),
        "{e}"
    );
}

const DSMEM: &str = r#"
    #[kernel]
    #[cluster_launch(4, 1, 1)]
    pub fn k(mut out: DisjointSlice<u32>) {
        static mut WORDS: SharedArray<u32, 8> = SharedArray::UNINIT;
        static mut HALVES: SharedArray<f32, 8> = SharedArray::UNINIT;
        let r = cluster::block_rank();
        let next = (r + 1) % cluster::cluster_size();
        cluster::cluster_sync();
        let a = unsafe { cluster::dsmem_read_u32(addr_of!(WORDS) as *const u32, next) };
        let p = unsafe { cluster::map_shared_rank(addr_of!(HALVES) as *const f32, next) };
        let b = unsafe { *p.add(3) } + unsafe { p.read() };
        let q = unsafe { cluster::map_shared_rank_mut(addr_of_mut!(WORDS) as *mut u32, next) };
        unsafe {
            *q.add(1) = a;
            q.add(2).write(b as u32);
            *q += 1;
        }
        cluster::cluster_sync();
        unsafe { *out.get_unchecked_mut(0) = a };
    }
"#;

#[test]
fn distributed_shared_memory_becomes_cluster_loads_and_stores() {
    let m = compile_ok(DSMEM);
    let k = &m.kernels[0];
    let (mut loads, mut stores) = (Vec::new(), 0);
    for s in stmts(k) {
        match s {
            Stmt::ClusterLoad { ty, .. } => loads.push(ty),
            Stmt::ClusterStore { .. } => stores += 1,
            _ => {}
        }
    }
    // `dsmem_read_u32`, `*p.add(3)`, `p.read()`, and the read of `*q += 1`.
    assert_eq!(
        loads,
        [
            ScalarType::U32,
            ScalarType::F32,
            ScalarType::F32,
            ScalarType::U32
        ]
    );
    assert_eq!(stores, 3, "{}", print_module(&m));
    let text = print_module(&m);
    assert!(text.contains("load.cluster.f32 shared[%"), "{text}");
}

#[test]
fn what_distributed_shared_memory_refuses_says_what_to_write() {
    let shared = "static mut W: SharedArray<u32, 8> = SharedArray::UNINIT;\
                  static mut F: SharedArray<f32, 8> = SharedArray::UNINIT;";
    for (body, says) in [
        (
            "let v = unsafe { cluster::dsmem_read_u32(addr_of!(F) as *const f32, 1) };",
            "cast the pointer (`as *const u32`)",
        ),
        (
            "let v = unsafe { cluster::dsmem_read_u32(addr_of!(W) as *const u32) };",
            "takes a pointer into shared memory and a cluster block rank",
        ),
        (
            "let v = unsafe { cluster::dsmem_read_u32(out.as_ptr(), 1) };",
            "a raw pointer into this block's shared memory",
        ),
        (
            "let p = unsafe { cluster::map_shared_rank(addr_of!(W) as *const u32, 1) };
             unsafe { *p = 3 };",
            "map a `*mut` one with `map_shared_rank_mut`",
        ),
        (
            "let p = unsafe { cluster::map_shared_rank(addr_of!(W) as *const u32, 1) };
             unsafe { p.write(3) };",
            "map a `*mut` one with `map_shared_rank_mut`",
        ),
        (
            "let p = unsafe { cluster::map_shared_rank_mut(addr_of!(W) as *const u32, 1) };",
            "maps a `*mut` pointer",
        ),
        (
            "let p = unsafe { cluster::map_shared_rank(addr_of!(W) as *const u32, 1) };
             let x = unsafe { p.offset_from(p) };",
            "not supported on `map_shared_rank`'s pointers",
        ),
    ] {
        let e = compile_err(&format!(
            "#[kernel] #[cluster_launch(2, 1, 1)] pub unsafe fn k(out: &mut [u32]) {{ {shared} {body} }}"
        ));
        assert!(e.contains(says), "{body}: {e}");
    }
}

#[test]
fn multicast_tensor_copies_name_their_cluster_mask() {
    let m = compile_ok(
        "#[kernel] #[cluster_launch(2, 1, 1)] pub fn k(map: TensorMap<f32, 2>, map3: TensorMap<f32, 3>, m: u16) {
            static mut T: SharedArray<f32, 64, 128> = SharedArray::UNINIT;
            static mut BAR: Barrier = Barrier::UNINIT;
            unsafe {
                cp_async_bulk_tensor_2d_g2s_multicast(&raw mut T as *mut u8, map.as_ptr(), 0, 0, &raw mut BAR, 3);
                cp_async_bulk_tensor_3d_g2s_multicast(&raw mut T as *mut u8, map3.as_ptr(), 0, 0, 0, &raw mut BAR, m);
            }
        }",
    );
    let masks: Vec<bool> = stmts(&m.kernels[0])
        .into_iter()
        .filter_map(|s| match s {
            Stmt::Tma(TmaOp::LoadTile { multicast, .. }) => Some(multicast.is_some()),
            _ => None,
        })
        .collect();
    assert_eq!(masks, [true, true]);
    assert!(m.needs_arch_specific(), "a multicast copy is sm_90a's");
}
