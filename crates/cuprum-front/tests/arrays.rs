//! Local arrays in the front end: nested arrays become one flat array in row-major order,
//! each index checked against its own dimension; the forms left out say exactly what is and is
//! not supported. (Their results are checked against Rust on the emulator in
//! `crates/cuprum/tests/simt_language.rs`.)

use cuprum_front::compile_source;
use cuprum_ir::{ScalarType, Stmt, TrapKind, print_kernel};

fn compile(body: &str) -> Result<cuprum_ir::Module, String> {
    compile_source(&format!("mod kernels {{ use super::*; {body} }}"))
        .map(|m| m.ir)
        .map_err(String::from)
}

fn compile_ok(body: &str) -> cuprum_ir::Module {
    compile(body).unwrap_or_else(|e| panic!("expected to compile, got: {e}"))
}

fn compile_err(body: &str) -> String {
    match compile(body) {
        Ok(m) => panic!("expected an error, got:\n{}", cuprum_ir::print_module(&m)),
        Err(e) => e,
    }
}

/// The constant that defines `v`, wherever it is in `block`.
fn constant(block: &cuprum_ir::Block, v: cuprum_ir::Value) -> Option<u64> {
    block.stmts.iter().find_map(|s| match s {
        Stmt::Def {
            value,
            op: cuprum_ir::Op::Const(c),
        } if *value == v => Some(c.bits),
        Stmt::If {
            then, otherwise, ..
        } => constant(then, v).or_else(|| constant(otherwise, v)),
        Stmt::Loop { body } => constant(body, v),
        _ => None,
    })
}

/// Every bounds check of `block` (nested blocks too), in order: (site, constant length).
fn bounds_checks(k: &cuprum_ir::Kernel, block: &cuprum_ir::Block, out: &mut Vec<(String, u64)>) {
    for s in &block.stmts {
        match s {
            Stmt::Trap(TrapKind::BoundsCheck { len, site, .. }) => {
                out.push((site.clone(), constant(&k.body, *len).unwrap_or(u64::MAX)));
            }
            Stmt::If {
                then, otherwise, ..
            } => {
                bounds_checks(k, then, out);
                bounds_checks(k, otherwise, out);
            }
            Stmt::Loop { body } => bounds_checks(k, body, out),
            _ => {}
        }
    }
}

#[test]
fn each_index_of_a_nested_array_is_checked_against_its_own_dimension() {
    let ir = compile_ok(
        r#"#[kernel] pub fn k(ix: &[usize], mut o: DisjointSlice<i32>) {
            let mut a = [[0i32; 3]; 4];
            a[ix[0]][ix[1]] = 5;
            if let Some(o) = o.get_mut(thread::index_1d()) { *o = a[ix[2]][ix[3]]; }
        }"#,
    );
    let k = &ir.kernels[0];
    // One flat array of 12 elements.
    assert_eq!(k.locals.len(), 1);
    assert_eq!((k.locals[0].elem, k.locals[0].len), (ScalarType::I32, 12));
    let mut checks = Vec::new();
    bounds_checks(k, &k.body, &mut checks);
    let local: Vec<(String, u64)> = checks
        .into_iter()
        .filter(|(site, _)| site.starts_with("a["))
        .collect();
    assert_eq!(
        local,
        [
            ("a[ix[0]]".to_string(), 4),
            ("a[ix[0]][ix[1]]".to_string(), 3),
            ("a[ix[2]]".to_string(), 4),
            ("a[ix[2]][ix[3]]".to_string(), 3),
        ],
        "{}",
        print_kernel(k)
    );
}

/// A local array of structs is one byte array, 16 bytes per `V2 { f32, f32, u64 }`, and a
/// run-time index into it is checked against its length (a failed check traps the launch
/// with a typed error, as every local array's does), reads and writes alike.
#[test]
fn an_array_of_structs_is_bytes_checked_against_its_length() {
    let ir = compile_ok(
        r#"#[derive(Clone, Copy)]
        pub struct V2 { pub x: f32, pub y: f32, pub n: u64 }
        #[kernel] pub fn k(ix: &[usize], mut o: DisjointSlice<f32>) {
            let mut ps = [V2 { x: 1.0, y: 2.0, n: 3 }; 5];
            ps[ix[0]].y = 4.0;
            if let Some(o) = o.get_mut(thread::index_1d()) { *o = ps[ix[1]].y; }
        }"#,
    );
    let k = &ir.kernels[0];
    assert_eq!(k.locals.len(), 1);
    assert_eq!(
        (k.locals[0].elem, k.locals[0].len),
        (ScalarType::U8, 5 * 16)
    );
    let mut checks = Vec::new();
    bounds_checks(k, &k.body, &mut checks);
    let local: Vec<(String, u64)> = checks
        .into_iter()
        .filter(|(site, _)| site.starts_with("ps["))
        .collect();
    assert_eq!(
        local,
        [("ps[ix[0]]".to_string(), 5), ("ps[ix[1]]".to_string(), 5)],
        "{}",
        print_kernel(k)
    );
}

#[test]
fn a_nested_array_takes_its_element_type_from_a_later_use() {
    let ir = compile_ok(
        r#"#[kernel] pub fn k(x: &[u16], mut o: DisjointSlice<u16>) {
            let mut a = [[0; 2]; 3];
            a[1][0] = x[0];
            let b = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]];
            let c: [[f64; 2]; 2] = [[0.0; 2]; 2];
            if let Some(o) = o.get_mut(thread::index_1d()) { *o = a[1][0] + b[1][0][1] as u16 + c[0][1] as u16; }
        }"#,
    );
    let locals: Vec<(ScalarType, u32)> = ir.kernels[0]
        .locals
        .iter()
        .map(|a| (a.elem, a.len))
        .collect();
    assert_eq!(
        locals,
        [
            (ScalarType::U16, 6),
            (ScalarType::I32, 8),
            (ScalarType::F64, 4)
        ]
    );
}

#[test]
fn nested_forms_left_out_say_what_is_supported() {
    let cases = [
        (
            "let a = [(1, 2); 4];",
            "the numbers of a tuple in an array need their types here",
        ),
        (
            "let a = [[(1u32, 2u32); 2]; 4];",
            "arrays of arrays of tuples or structs are not supported in device code yet",
        ),
        (
            "let a = [(1u32, 2u32), 3u32];",
            "the elements of an array must all have one type",
        ),
        (
            "let a = [[1, 2], [3]];",
            "the elements of an array must all have one shape",
        ),
        (
            "let a = [[0u8; 200]; 100];",
            "this array has 20000 elements in all; local arrays may have at most 16384",
        ),
        (
            "let a = [[0; 3]; 2]; let b = a[1] + 1;",
            "no arithmetic between an array `[i32; 3]` and an integer literal",
        ),
        (
            "let mut a = [[0; 3]; 2]; a[1] += 1;",
            "`a[1]` is a row `[i32; 3]` of an array of arrays, not a number",
        ),
        (
            "let mut a = [[0; 3]; 2]; a[1] = [1, 2];",
            "mismatched types: expected `[i32; 3]`, found `[i32; 2]`",
        ),
        (
            "let mut a = [[0i32; 3]; 2]; a = [[0u32; 3]; 2];",
            "mismatched types: expected `[[i32; 3]; 2]`, found `[[u32; 3]; 2]`",
        ),
        (
            "let mut a = [[0i32; 3]; 2]; a[0] = 7;",
            "mismatched types: expected `[i32; 3]`, found an integer literal",
        ),
    ];
    for (stmt, needle) in cases {
        let e = compile_err(&format!(
            "#[kernel] pub fn k(x: &[f32], mut o: DisjointSlice<f32>) {{ {stmt} }}"
        ));
        assert!(e.contains(needle), "`{stmt}`: expected `{needle}` in: {e}");
    }
}

#[test]
fn local_arrays_past_the_per_thread_limit_are_refused_at_compile_time() {
    // 6 arrays of 128 KiB (one of them in a helper, inlined into the kernel) and one of
    // 64 KiB: 832 KiB, past the 512 KiB a GPU thread has.
    let e = compile_err(
        r#"fn scratch() -> f64 { let s = [1.0f64; 16384]; s[7] }
        #[kernel] pub fn big(x: &[f64], mut o: DisjointSlice<f64>) {
            let a = [0.0f64; 16384];
            let b = [[0.0f64; 4096]; 4];
            let c = [0u64; 16384];
            let d = [0i64; 16384];
            let e = [0.5f64; 16384];
            let f = [[1u32; 128]; 128];
            if let Some(o) = o.get_mut(thread::index_1d()) {
                *o = a[1] + b[1][2] + c[3] as f64 + d[4] as f64 + e[5] + f[6][7] as f64 + scratch();
            }
        }"#,
    );
    let limit = cuprum_ir::MAX_LOCAL_BYTES / 1024;
    assert_eq!(limit, 512);
    assert!(
        e.contains(
            "kernel `big` needs 832 KiB of local memory per thread for its arrays, more than \
             the 512 KiB a GPU thread has; the largest: `a: [f64; 16384]`, 128 KiB at line 3; \
             `b: [[f64; 4096]; 4]`, 128 KiB at line 4; `c: [u64; 16384]`, 128 KiB at line 5"
        ),
        "{e}"
    );
    // Under the limit, the same arrays are fine.
    compile_ok(
        r#"#[kernel] pub fn fits(mut o: DisjointSlice<f64>) {
            let a = [0.0f64; 16384];
            let b = [[0.0f64; 4096]; 3];
            if let Some(o) = o.get_mut(thread::index_1d()) { *o = a[1] + b[1][2]; }
        }"#,
    );
}

#[test]
fn a_specialization_past_the_local_memory_limit_says_which() {
    let source = r#"mod kernels { use super::*;
        #[kernel] pub fn staged<const N: usize>(mut o: DisjointSlice<f64>) {
            let a = [0.0f64; N];
            let b = [1.0f64; N];
            let c = [2.0f64; N];
            let d = [3.0f64; N];
            let e = [4.0f64; N];
            if let Some(o) = o.get_mut(thread::index_1d()) { *o = a[1] + b[2] + c[3] + d[4] + e[5]; }
        }
    }"#;
    // Checked with N = 32 at compile time: fine.
    compile_source(source).expect("the generic kernel compiles");
    let spec = |n| cuprum_front::Specialization {
        types: vec![],
        consts: vec![("N".into(), n)],
    };
    if let Err(e) = cuprum_front::compile_specialized(source, "staged", &spec(8192)) {
        panic!("5 arrays of 64 KiB fit: {e}");
    }
    let e = cuprum_front::compile_specialized(source, "staged", &spec(16384)).unwrap_err();
    assert!(
        e.contains(
            "kernel `staged` (with N = 16384) needs 640 KiB of local memory per thread for its \
             arrays, more than the 512 KiB a GPU thread has; the largest: `a: [f64; 16384]`, \
             128 KiB at line 3"
        ),
        "{e}"
    );
}

#[test]
fn an_untyped_array_literal_takes_the_type_of_where_it_goes() {
    // As rustc infers them: a helper's result and parameter types, and the array assigned to.
    let ir = compile_ok(
        r#"fn zeros() -> [f32; 4] { [0.0; 4] }
        fn first(v: [u8; 3]) -> u8 { v[0] }
        #[kernel] pub fn k(x: &[u16], mut o: DisjointSlice<f32>) {
            let mut a = [[0u16; 3]; 2];
            a[1] = [1, 2, 3];
            let mut b = [x[0]; 2];
            b = [7, 8];
            let z = zeros();
            let f = first([4, 5, 6]);
            if let Some(o) = o.get_mut(thread::index_1d()) {
                *o = z[1] + (a[1][2] + b[1]) as f32 + f as f32;
            }
        }"#,
    );
    let types: Vec<ScalarType> = ir.kernels[0].locals.iter().map(|a| a.elem).collect();
    assert!(
        !types
            .iter()
            .any(|t| matches!(t, ScalarType::I32 | ScalarType::F64)),
        "no array may keep a literal's default type: {types:?}"
    );
}
