//! What ported CUDA kernels need of the front end: const-generic lengths in helpers,
//! generic zeros and numeric constants, `return` from inside a helper's loops, nested
//! structs and `nvptx`'s registers; and the messages for what stays unsupported near them,
//! each saying what to write instead. (The kernels run, against references, in
//! `crates/cuprum/tests/simt_porting.rs`.)

use cuprum_front::{Specialization, compile_source, compile_specialized};
use cuprum_ir::{ScalarType, print_module};

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

/// `kernel` of `body` specialized with `types` and `consts`.
#[track_caller]
fn specialize(
    body: &str,
    kernel: &str,
    types: &[(&str, ScalarType)],
    consts: &[(&str, i128)],
) -> Result<cuprum_ir::Module, String> {
    let spec = Specialization {
        types: types.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        consts: consts.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
    };
    compile_specialized(&module(body), kernel, &spec)
}

#[test]
fn a_return_inside_loops_of_a_helper_leaves_them_through_a_flag() {
    let ir = compile_ok(
        r#"fn find(x: &[u32], v: u32) -> u32 {
               let mut r = 0;
               while r < 8 {
                   for c in 0..x.len() {
                       if x[c] == v + r { return c as u32; }
                   }
                   r += 1;
               }
               99
           }
           #[kernel] pub unsafe fn k(x: &[u32], out: &mut [u32]) {
               let i = thread::index_1d().get();
               out[i] = find(x, i as u32);
           }"#,
    );
    let text = print_module(&ir);
    assert!(text.contains("find_returned"), "{text}");
}

#[test]
fn a_helper_without_a_return_in_a_loop_has_no_flag() {
    let ir = compile_ok(
        r#"fn clamp(v: u32) -> u32 { if v > 9 { return 9; } v }
           #[kernel] pub unsafe fn k(out: &mut [u32]) {
               let i = thread::index_1d().get();
               out[i] = clamp(i as u32);
           }"#,
    );
    assert!(!print_module(&ir).contains("_returned"));
}

const TILES: &str = r#"
    const PAD: usize = 1;
    fn row<const N: usize>(t: &SharedArray<f32, { N * (N + PAD) }>, r: usize) -> [f32; N] {
        let mut out = [0.0f32; N];
        for k in 0..N { out[k] = unsafe { t.get(r * (N + PAD) + k) }; }
        out
    }
    fn total<T: Num, const N: usize>(a: [T; N]) -> T {
        let mut s = T::ZERO;
        for k in 0..N { s += a[k]; }
        s
    }
    #[kernel]
    pub unsafe fn k<const B: usize>(x: &[f32], out: &mut [f32]) {
        let t = SharedArray::<f32, { B * (B + PAD) }>::uninit();
        let i = thread::threadIdx_x() as usize;
        t.set(i, x[i]);
        sync_threads();
        let r = row::<B>(&t, 0);
        let local = [1.0f32; B];
        out[i] = total(r) + total(local) + total::<f32, { B / 2 }>([2.0; B / 2]);
    }
"#;

#[test]
fn const_parameters_size_shared_and_local_arrays_of_kernels_and_helpers() {
    let ir = specialize(TILES, "k", &[], &[("B", 16)]).expect("B = 16 compiles");
    let kernel = &ir.kernels[0];
    assert_eq!(kernel.name, "k__16");
    assert_eq!(kernel.shared.len(), 1);
    assert_eq!(kernel.shared[0].len, 16 * 17);
    let lengths: Vec<u32> = kernel.locals.iter().map(|a| a.len).collect();
    assert!(lengths.contains(&16) && lengths.contains(&8), "{lengths:?}");
    // A `u32` const parameter sizes a shared array too.
    specialize(
        "#[kernel] pub unsafe fn k<const B: u32>(out: &mut [u32]) {
             let t = SharedArray::<u32, { B as usize * 2 }>::uninit();
             t.set(0, B);
             out[0] = t.get(0) + t.len() as u32;
         }",
        "k",
        &[],
        &[("B", 48)],
    )
    .map(|ir| assert_eq!(ir.kernels[0].shared[0].len, 96))
    .expect("a u32 const parameter");
}

#[test]
fn a_const_parameter_no_argument_gives_must_be_named() {
    let e = compile_err(
        "fn ones<const N: usize>() -> [f32; N] { [1.0; N] }
         #[kernel] pub unsafe fn k(out: &mut [f32]) { let a = ones(); out[0] = a[0]; }",
    );
    assert!(
        e.contains("cannot infer the const parameter `N` of `ones`: name it with a turbofish"),
        "{e}"
    );
}

const ZEROS: &str = r#"
    #[derive(Clone, Copy, Default)] pub struct P { pub a: f32, pub b: u32 }
    #[kernel]
    pub unsafe fn k<T: Num>(x: &[T], out: &mut [T], flags: &mut [u32]) {
        let mut s = T::ZERO;
        let z: T = Default::default();
        let mut acc = Default::default();
        acc += x[1];
        s += x[0] * T::ONE + z + T::default() + <T as Default>::default();
        if s > T::MAX || s < T::MIN { s = T::ZERO; }
        out[0] = s + acc;
        let p = P::default();
        flags[0] = p.b + u32::default() + (p.a == f32::ZERO) as u32;
    }
"#;

#[test]
fn generic_zeros_and_constants_take_the_specialized_type() {
    for ty in [
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::I32,
        ScalarType::U32,
        ScalarType::F16,
    ] {
        if let Err(e) = specialize(ZEROS, "k", &[("T", ty)], &[]) {
            panic!("T = {ty}: {e}");
        }
    }
}

#[test]
fn unknown_zeros_and_associated_functions_say_what_device_code_knows() {
    let e = compile_err(
        "#[kernel] pub unsafe fn k(out: &mut [f32]) { let z = Default::default(); out[0] = 1.0; }",
    );
    assert!(
        e.contains("cannot tell the type of this `Default::default()`"),
        "{e}"
    );
    let e = compile_err("#[kernel] pub unsafe fn k(out: &mut [f32]) { out[0] = f32::PI; }");
    assert!(
        e.contains("`f32::PI` is not a constant device code knows"),
        "{e}"
    );
    let e = compile_err(
        "#[kernel] pub unsafe fn k<T: Num>(x: &[u32], out: &mut [T]) { out[0] = T::from(x[0]); }",
    );
    assert!(
        e.contains("is not a device function known to cuprum") && e.contains("`x as T`"),
        "{e}"
    );
}

const BODIES: &str = r#"
    #[derive(Clone, Copy, Default)] pub struct V3 { pub x: f32, pub y: f32, pub z: f32 }
    #[derive(Clone, Copy, Default)] pub struct Body { pub pos: V3, pub vel: V3 }
    fn step(b: Body, dt: f32) -> Body {
        let mut n = b;
        n.pos.x += n.vel.x * dt;
        n.pos = V3 { y: n.pos.y + n.vel.y * dt, ..n.pos };
        n
    }
    #[kernel]
    pub unsafe fn k(sun: Body, out: &mut [f32]) {
        let mut b = step(sun, 0.5);
        let d = Body::default();
        b.vel = d.vel;
        b.vel.y = b.pos.x + 1.0;
        let c = if b.vel.y > 0.0 { b } else { Body { pos: b.vel, vel: b.pos } };
        out[0] = c.vel.y + sun.pos.z;
    }
"#;

#[test]
fn nested_structs_are_parameters_locals_fields_and_helper_values() {
    let ir = compile_ok(BODIES);
    let names: Vec<&str> = ir.kernels[0]
        .params
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "sun.pos.x",
            "sun.pos.y",
            "sun.pos.z",
            "sun.vel.x",
            "sun.vel.y",
            "sun.vel.z",
            "out"
        ]
    );
}

#[test]
fn what_structs_cannot_be_yet_says_what_to_write() {
    let structs = "#[derive(Clone, Copy)] pub struct V3 { pub x: f32, pub y: f32, pub z: f32 }";
    // Slices and shared arrays of structs work (`simt_aggregates`); tuples have no layout.
    compile_ok(&format!(
        "{structs} #[kernel] pub unsafe fn k(v: &[V3], out: &mut [f32]) {{ out[0] = v[0].y; }}"
    ));
    let e = compile_err(
        "#[kernel] pub unsafe fn k(v: &[(f32, u32)], out: &mut [f32]) { out[0] = 1.0; }",
    );
    assert!(
        e.contains("Rust promises no layout for tuples") && e.contains("#[repr(C)]"),
        "{e}"
    );
    let e = compile_err(&format!(
        "{structs} #[kernel] pub unsafe fn k(v: *const V3, out: &mut [f32]) {{ out[0] = 1.0; }}"
    ));
    assert!(e.contains("one pointer per field"), "{e}");
    let e = compile_err(&format!(
        "{structs} #[kernel] pub unsafe fn k(out: &mut [f32]) {{
             let s = dynamic_shared::<V3>();
             out[0] = 1.0;
         }}"
    ));
    assert!(e.contains("dynamic shared memory holds scalars"), "{e}");
    let e = compile_err(
        "#[kernel] pub fn k(mut out: DisjointSlice<f32>) {
             let mut s = SharedArray::<[f32; 17], 16>::uninit();
             s[0][1] = 2.0;
         }",
    );
    assert!(
        e.contains("indexing a shared array (`s[0]`) is `unsafe`"),
        "{e}"
    );
    let e = compile_err(
        "#[derive(Clone, Copy)] pub struct A { pub v: [f32; 3] }
         #[kernel] pub unsafe fn k(a: A, out: &mut [f32]) { out[0] = 1.0; }",
    );
    assert!(e.contains("use one scalar field per element"), "{e}");
    let e = compile_err(
        "#[derive(Clone, Copy)] pub struct P(f32, f32);
         #[kernel] pub unsafe fn k(out: &mut [f32]) { out[0] = 1.0; }",
    );
    assert!(e.contains("device structs need named fields"), "{e}");
}

#[test]
fn nvptx_registers_are_i32s() {
    let ir = compile_ok(
        "#[kernel] pub unsafe fn k(a: *const f32, c: *mut f32, n: i32) {
             let idx = nvptx::_thread_idx_x() + nvptx::_block_idx_x() * nvptx::_block_dim_x();
             nvptx::_syncthreads();
             if idx < n { let i = idx as usize; *c.add(i) = *a.add(i) * 2.0; }
         }",
    );
    let text = print_module(&ir);
    assert!(text.contains("barrier"), "{text}");
}

#[test]
fn nvptx_calls_beyond_cuprums_say_what_to_call() {
    let e = compile_err(
        "#[kernel] pub unsafe fn k(out: *mut i32) { *out = core::arch::nvptx::_thread_idx_x(); }",
    );
    assert!(
        e.contains("exists only on the nightly `nvptx64` target")
            && e.contains("cuprum::simt::nvptx::_thread_idx_x"),
        "{e}"
    );
    let e = compile_err("#[kernel] pub unsafe fn k(out: *mut i32) { nvptx::trap(); }");
    assert!(
        e.contains("not one of the intrinsics of `cuprum::simt::nvptx`"),
        "{e}"
    );
}

#[test]
fn labelled_loops_say_what_to_write_instead() {
    let e = compile_err(
        "#[kernel] pub unsafe fn k(out: &mut [u32]) {
             'outer: for i in 0..4 { for j in 0..4 { if i * j == 4 { break 'outer; } } }
             out[0] = 1;
         }",
    );
    assert!(e.contains("`return` from it"), "{e}");
}
