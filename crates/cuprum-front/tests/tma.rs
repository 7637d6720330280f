//! What the front end makes of cuda-oxide's TMA API: tensor-map parameters (cuprum's
//! `TensorMap<T, RANK>` and cuda-oxide's `*const TmaDescriptor`), the copies of every rank as
//! `Stmt::Tma`, `SharedArray<T, N, ALIGN>` alignments up to 1024, and the messages for what is
//! refused. (The kernels run in `crates/cuprum/tests/tma.rs`.)

use cuprum_front::compile_source;
use cuprum_ir::{ParamKind, ScalarType, Stmt, TensorMapRef, TmaOp, print_module};

fn module(body: &str) -> String {
    format!("mod kernels {{ use super::*; {body} }}")
}

#[track_caller]
fn compile_ok(body: &str) -> cuprum_ir::Module {
    match compile_source(&module(body)) {
        Ok(m) => m.ir,
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

/// The `Stmt::Tma`s of a kernel's body, in order, nested blocks included.
fn tma_ops(k: &cuprum_ir::Kernel) -> Vec<TmaOp> {
    let mut out = Vec::new();
    k.body.visit(&mut |s| {
        if let Stmt::Tma(op) = s {
            out.push(op.clone());
        }
    });
    out
}

const COPY: &str = r#"
    #[kernel]
    pub fn copy3(map: TensorMap<half::f16, 3>, raw: *const TmaDescriptor, x: i32) {
        static mut TILE: SharedArray<half::f16, 4096, 1024> = SharedArray::UNINIT;
        static mut BAR: Barrier = Barrier::UNINIT;
        unsafe {
            cp_async_bulk_tensor_3d_g2s(&raw mut TILE as *mut u8, map.as_ptr(), x, 1, 2, &raw mut BAR);
            cp_async_bulk_tensor_1d_s2g(&raw const TILE as *const u8, raw, x);
        }
        cp_async_bulk_commit_group();
        cp_async_bulk_wait_group_read(1);
        cp_async_bulk_wait_group(0);
    }
"#;

#[test]
fn copies_of_every_form_become_tma_statements() {
    let m = compile_ok(COPY);
    let k = &m.kernels[0];
    assert_eq!(
        k.params[0].kind,
        ParamKind::TensorMap {
            elem: ScalarType::F16,
            rank: 3
        }
    );
    assert_eq!(k.params[1].kind, ParamKind::Scalar(ScalarType::U64));
    let ops = tma_ops(k);
    assert!(
        matches!(&ops[0], TmaOp::LoadTile { map: TensorMapRef::Param(0), coords, .. } if coords.len() == 3),
        "{ops:?}"
    );
    assert!(
        matches!(&ops[1], TmaOp::StoreTile { map: TensorMapRef::Global(_), coords, .. } if coords.len() == 1),
        "{ops:?}"
    );
    assert_eq!(ops[2], TmaOp::Commit);
    assert_eq!(
        ops[3],
        TmaOp::WaitGroup {
            pending: 1,
            read: true
        }
    );
    assert_eq!(
        ops[4],
        TmaOp::WaitGroup {
            pending: 0,
            read: false
        }
    );
    assert_eq!(k.shared_alignment(0), 1024);
}

#[test]
fn shared_arrays_take_alignments_up_to_1024() {
    for align in [128u32, 256, 1024] {
        let m = compile_ok(&format!(
            "#[kernel] pub fn k(mut o: DisjointSlice<f32>) {{
                static mut A: SharedArray<f32, 3> = SharedArray::UNINIT;
                static mut T: SharedArray<f32, 64, {align}> = SharedArray::UNINIT;
                let i = thread::index_1d();
                unsafe {{ A[0] = 1.0; T[0] = A[0]; if let Some(o) = o.get_mut(i) {{ *o = T[0]; }} }}
            }}"
        ));
        let k = &m.kernels[0];
        let (offsets, _) = k.shared_layout();
        assert_eq!(k.shared_alignment(1), align);
        assert_eq!(offsets[1] % align, 0, "{offsets:?}");
    }
    let e = compile_err(
        "#[kernel] pub fn k() { static mut T: SharedArray<f32, 64, 2048> = SharedArray::UNINIT; }",
    );
    assert!(e.contains("at most 1024 bytes"), "{e}");
}

#[test]
fn what_the_tma_api_refuses_says_what_to_write() {
    let e = compile_err("#[kernel] pub fn k(map: TensorMap<f32, 6>) {}");
    assert!(e.contains("`TensorMap<T, RANK>`"), "{e}");
    let e = compile_err("#[kernel] pub fn k(n: u32) { cp_async_bulk_wait_group(n); }");
    assert!(e.contains("immediate"), "{e}");
    let e = compile_err(
        "#[kernel] pub fn k(map: TensorMap<f32, 2>) {
            static mut T: SharedArray<f32, 64, 128> = SharedArray::UNINIT;
            static mut BAR: Barrier = Barrier::UNINIT;
            unsafe { cp_async_bulk_tensor_2d_g2s_multicast_cg2(&raw mut T as *mut u8, map.as_ptr(), 0, 0, &raw mut BAR, 3) }
        }",
    );
    assert!(e.contains("sm_100a"), "{e}");
    let e = compile_err(
        "#[kernel] pub fn k(map: TensorMap<f32, 2>) {
            static mut T: SharedArray<f32, 64, 128> = SharedArray::UNINIT;
            static mut BAR: Barrier = Barrier::UNINIT;
            unsafe { cp_async_bulk_tensor_2d_g2s_multicast(&raw mut T as *mut u8, map.as_ptr(), 0, 0, &raw mut BAR) }
        }",
    );
    assert!(e.contains("`u16` mask of cluster ranks"), "{e}");
    let e = compile_err(
        "#[kernel] pub fn k(map: TensorMap<f32, 2>) {
            static mut BAR: Barrier = Barrier::UNINIT;
            unsafe { cp_async_bulk_tensor_2d_g2s(&raw mut BAR as *mut u8, map.as_ptr(), 0, &raw mut BAR) }
        }",
    );
    assert!(
        e.contains("a shared destination, a tensor map, 2 coordinates"),
        "{e}"
    );
    let e = compile_err("#[kernel] pub fn k(p: *mut TmaDescriptor) {}");
    assert!(e.contains("read only"), "{e}");
}
