//! Front-end tests that need no backend: what compiles, the IR it gives, and the errors (with
//! their messages) for what device code cannot do.

use cuprum_front::compile_source;
use cuprum_ir::{ScalarType, print_kernel, validate_module};

fn module(body: &str) -> String {
    format!("mod kernels {{ use super::*; {body} }}")
}

fn compile_ok(body: &str) -> cuprum_ir::Module {
    match compile_source(&module(body)) {
        Ok(m) => {
            if let Err(e) = validate_module(&m.ir) {
                panic!("invalid IR: {e}");
            }
            m.ir
        }
        Err(e) => panic!("expected to compile, got: {e}"),
    }
}

fn compile_err(body: &str) -> String {
    match compile_source(&module(body)) {
        Ok(m) => panic!(
            "expected an error, got IR:\n{}",
            cuprum_ir::print_module(&m.ir)
        ),
        Err(e) => e.message,
    }
}

#[test]
fn a_source_error_says_where_it_points() {
    // Line 1 is `mod kernels {`; the unknown function is on the third line of the body.
    let source = "mod kernels {\n    use super::*;\n    #[kernel]\n    pub fn k(mut out: DisjointSlice<f32>) {\n        let x = no_such_function(1.0);\n    }\n}";
    let error = compile_source(source).expect_err("an unknown function is an error");
    assert!(error.message.contains("no_such_function"), "{error}");
    assert_eq!((error.line, error.column), (5, 16), "{error:?}");
    assert_eq!(String::from(error.clone()), error.message);
}

const VECADD: &str = r#"
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = c.get_mut(i) {
            *out = a[i.get()] + b[i.get()];
        }
    }
"#;

#[test]
fn vecadd_compiles_with_params_and_bounds() {
    let ir = compile_ok(VECADD);
    let k = &ir.kernels[0];
    assert_eq!(k.name, "vecadd");
    assert_eq!(k.params.len(), 3);
    assert_eq!(k.launch_bounds.map(|b| b.max_threads), Some(256));
    let text = print_kernel(k);
    assert!(text.contains("c: disjoint [f32]"), "{text}");
    assert!(
        text.contains("bounds_check"),
        "slice indexing must be checked:\n{text}"
    );
}

#[test]
fn the_same_source_gives_the_same_ir() {
    assert_eq!(compile_ok(VECADD), compile_ok(VECADD));
}

#[test]
fn mutable_literal_takes_its_type_from_later_use() {
    let ir = compile_ok(
        r#"#[kernel] pub fn sum(x: &[f64], mut out: DisjointSlice<f64>) {
            let i = thread::index_1d();
            let mut acc = 0.0;
            let mut k = 0;
            while k < x.len() { acc += x[k]; k += 1; }
            if let Some(o) = out.get_mut(i) { *o = acc; }
        }"#,
    );
    let vars: Vec<(String, ScalarType)> = ir.kernels[0]
        .vars
        .iter()
        .map(|(_, v)| (v.name.clone(), v.ty))
        .collect();
    assert!(vars.contains(&("acc".into(), ScalarType::F64)), "{vars:?}");
    assert!(vars.contains(&("k".into(), ScalarType::U64)), "{vars:?}");
}

#[test]
fn unconstrained_literals_default_like_rust() {
    let ir = compile_ok(
        r#"#[kernel] pub fn d(mut out: DisjointSlice<i32>) {
            let i = thread::index_1d();
            let mut n = 0;
            let mut f = 1.5;
            n += 2;
            f *= 2.0;
            if let Some(o) = out.get_mut(i) { *o = n + (f as i32); }
        }"#,
    );
    let vars: Vec<(String, ScalarType)> = ir.kernels[0]
        .vars
        .iter()
        .map(|(_, v)| (v.name.clone(), v.ty))
        .collect();
    assert!(vars.contains(&("n".into(), ScalarType::I32)), "{vars:?}");
    assert!(vars.contains(&("f".into(), ScalarType::F64)), "{vars:?}");
}

#[test]
fn unsupported_rust_is_an_error_that_says_why() {
    let cases = [
        ("let v = Vec::new();", "heap"),
        ("let s = format!(\"hi\");", "formatting into strings"),
        (
            "let mut n = 0.0f32; let mut f = |x: f32| n += x; f(1.0);",
            "closures that change what they capture",
        ),
        ("let s = std::f32::consts::PI;", "not a value known"),
        ("let t = a.iter();", "method `iter` is not supported"),
        (
            "let m = loop { break 2; };",
            "`break` with a value is not supported",
        ),
        ("let s = o.first();", "method `first` is not supported"),
        (
            "let e = (a[0] as f64).powf(2.5);",
            "on `f64` is not supported",
        ),
    ];
    for (stmt, needle) in cases {
        let e = compile_err(&format!(
            "#[kernel] pub fn k(a: &[f32], mut o: DisjointSlice<f32>) {{ {stmt} }}"
        ));
        assert!(e.contains(needle), "`{stmt}`: expected `{needle}` in: {e}");
    }
}

#[test]
fn signature_errors() {
    let e = compile_err("#[kernel] pub fn k(a: &mut [f32]) {}");
    assert!(e.contains("only allowed in `unsafe` kernels"), "{e}");
    let e = compile_err("#[kernel] pub fn k(a: Vec<f32>) {}");
    assert!(e.contains("unsupported kernel parameter type"), "{e}");
    let e = compile_err("#[kernel] pub fn k(a: &[f32]) -> f32 { 1.0 }");
    assert!(e.contains("kernels return nothing"), "{e}");
    let e = compile_err(
        "#[kernel] #[launch_bounds(64)] #[launch_contract(domain = 1, block = (128, 1, 1))] pub fn k(a: &[f32]) {}",
    );
    assert!(e.contains("exceeds #[launch_bounds(64)]"), "{e}");
    let e = compile_err(
        "#[kernel] #[launch_contract(domain = 4, block = (128, 1, 1))] pub fn k(a: &[f32]) {}",
    );
    assert!(e.contains("domain must be 1, 2 or 3"), "{e}");
}

#[test]
fn an_unsafe_kernel_declares_its_block_or_a_whole_contract() {
    let ir = compile_ok(
        "#[kernel] #[launch_contract(block = (32, 8, 1))] pub unsafe fn k(a: &mut [f32]) {}",
    );
    assert_eq!(ir.kernels[0].block, Some((32, 8, 1)));
    // A whole contract on an `unsafe` kernel (cuda-oxide's shape): prepared, then launched
    // in `unsafe` (the host side is tested in cuprum's `oxide_names`).
    let ir = compile_ok(
        "#[kernel] #[launch_contract(domain = 1, block = (32, 8, 1))] pub unsafe fn k(a: &mut [f32]) {}",
    );
    assert_eq!(ir.kernels[0].block, Some((32, 8, 1)));
    let e = compile_err("#[kernel] #[launch_contract(block = (32, 8, 1))] pub fn k(a: &[f32]) {}");
    assert!(e.contains("needs its domain"), "{e}");
    let e = compile_err(
        "#[kernel] #[launch_contract(block = (64, 32, 1))] pub unsafe fn k(a: &mut [f32]) {}",
    );
    assert!(e.contains("1024"), "{e}");
    let e = compile_err("#[kernel] #[launch_contract(domain = 1)] pub fn k(a: &[f32]) {}");
    assert!(e.contains("expected #[launch_contract("), "{e}");
}

#[test]
fn the_declared_block_bounds_thread_indices() {
    // tile[ty * 33 + tx] needs a check below launch_bounds(256) (ty may be 255), none with
    // the 32x8 block declared.
    let body = |contract: &str| {
        format!(
            "#[kernel] #[launch_bounds(256)] {contract} pub unsafe fn k(a: &mut [f32]) {{
                let tile = SharedArray::<f32, {{ 8 * 33 }}>::uninit();
                let tx = thread::threadIdx_x() as usize;
                let ty = thread::threadIdx_y() as usize;
                unsafe {{ tile.set(ty * 33 + tx, 1.0) }};
            }}"
        )
    };
    let checked = print_kernel(&compile_ok(&body("")).kernels[0]);
    assert!(checked.contains("bounds_check"), "{checked}");
    let declared =
        print_kernel(&compile_ok(&body("#[launch_contract(block = (32, 8, 1))]")).kernels[0]);
    assert!(!declared.contains("bounds_check"), "{declared}");
    assert!(declared.contains("block(32, 8, 1)"), "{declared}");
}

#[test]
fn a_short_circuit_of_plain_comparisons_is_straight_code() {
    let text = print_kernel(
        &compile_ok(
            "#[kernel] pub unsafe fn k(a: &mut [f32], w: u32, h: u32) {
                let x = thread::threadIdx_x();
                let y = thread::threadIdx_y();
                if x < w && y < h { a[0] = 1.0; }
                if x < w || a[1] > 0.0 { a[2] = 1.0; }
            }",
        )
        .kernels[0],
    );
    // The first `&&` is an `And`; the second `||` reads memory on its right, so it stays a
    // branch over a variable.
    assert!(text.contains("= And "), "{text}");
    assert_eq!(text.matches("var $").count(), 1, "{text}");
}

#[test]
fn disjoint_slices_take_only_the_thread_index() {
    let e = compile_err(
        "#[kernel] pub fn k(mut o: DisjointSlice<f32>) { if let Some(x) = o.get_mut(3) { *x = 1.0; } }",
    );
    assert!(e.contains("indexed by the thread's own index"), "{e}");
}

#[test]
fn type_mismatches_are_reported() {
    let e = compile_err(
        "#[kernel] pub fn k(a: &[f32], mut o: DisjointSlice<u32>) { let i = thread::index_1d(); if let Some(x) = o.get_mut(i) { *x = a[i.get()]; } }",
    );
    assert!(
        e.contains("mismatched types: expected `u32`, found `f32`"),
        "{e}"
    );
}

fn var_types(ir: &cuprum_ir::Module) -> Vec<(String, ScalarType)> {
    ir.kernels[0]
        .vars
        .iter()
        .map(|(_, v)| (v.name.clone(), v.ty))
        .collect()
}

#[test]
fn types_flow_through_shuffles_and_reductions() {
    // The operand's type is what the result's uses say, as rustc infers `T` of
    // `shuffle<T>`: `j` is a `u64` (not the literal's default `i32`), `total` an `f32`.
    let ir = compile_ok(
        r#"#[kernel] pub fn k(x: &[u64], y: &[f32], c: AtomicSlice<u64>, mut o: DisjointSlice<u64>, mut s: DisjointSlice<f32>) {
            let i = thread::index_1d();
            let mut old = 0;
            old = c.fetch_add(0, 1);
            let mut j = 0;
            j = warp::shuffle(j, 0);
            j = warp::shuffle_xor(j, 1) + x[0];
            let mut total = 0.0;
            total = warp::reduce_max(total);
            total = warp::reduce_add(total) + y[0];
            let seven = warp::shuffle_down(7, 1);
            if let Some(o) = o.get_mut(i) { *o = j + seven + old; }
            if let Some(s) = s.get_mut(i) { *s = total; }
        }"#,
    );
    let vars = var_types(&ir);
    assert!(vars.contains(&("j".into(), ScalarType::U64)), "{vars:?}");
    assert!(vars.contains(&("old".into(), ScalarType::U64)), "{vars:?}");
    assert!(
        vars.contains(&("total".into(), ScalarType::F32)),
        "{vars:?}"
    );
}

#[test]
fn a_generic_helper_takes_its_type_from_the_typed_argument() {
    let ir = compile_ok(
        r#"fn add<T>(a: T, b: T) -> T { a + b }
        #[kernel] pub fn k(x: &[f32], mut o: DisjointSlice<f32>) {
            let i = thread::index_1d();
            let mut acc = 0.0;
            acc = add(acc, x[0]);
            if let Some(o) = o.get_mut(i) { *o = acc; }
        }"#,
    );
    assert!(var_types(&ir).contains(&("acc".into(), ScalarType::F32)));
}

#[test]
fn mut_kernel_parameters_can_be_reassigned() {
    let ir = compile_ok(
        r#"struct P { a: u32, b: f32 }
        #[kernel] pub fn k(mut n: u32, mut p: P, mut o: DisjointSlice<f32>) {
            let i = thread::index_1d();
            n = warp::shuffle(n, 0);
            n += 1;
            p.b = p.b * 2.0;
            p = P { a: n, b: p.b };
            if let Some(o) = o.get_mut(i) { *o = p.b + p.a as f32; }
        }"#,
    );
    let vars = var_types(&ir);
    assert!(vars.contains(&("n".into(), ScalarType::U32)), "{vars:?}");
    assert!(vars.contains(&("p.1".into(), ScalarType::F32)), "{vars:?}");
}

#[test]
fn assigning_what_cannot_be_assigned_says_why() {
    let e = compile_err(
        "#[kernel] pub fn k(n: u32, mut o: DisjointSlice<u32>) { n = 3; let j = 1; j = 2; }",
    );
    assert!(
        e.contains("immutable variable `n`: declare it `let mut n` (or `mut n: T`"),
        "{e}"
    );
    let e = compile_err("#[kernel] pub fn k(mut o: DisjointSlice<u32>) { let j = 1; j = 2; }");
    assert!(e.contains("immutable variable `j`"), "{e}");
    let e = compile_err(
        "#[kernel] pub unsafe fn k(p: *const u32, mut o: DisjointSlice<u32>) { p = p.add(1); }",
    );
    assert!(e.contains("a raw pointer cannot be reassigned"), "{e}");
    let e = compile_err(
        "#[kernel] pub fn k(mut o: DisjointSlice<u32>) { if let Some(x) = o.get_mut(thread::index_1d()) { x = 1; } }",
    );
    assert!(e.contains("write `*x = ...`"), "{e}");
}

#[test]
fn a_method_call_on_a_struct_names_the_missing_method() {
    let e = compile_err(
        "struct R { w: f32 } #[kernel] pub fn k(r: R, mut o: DisjointSlice<f32>) { let a = r.area(); }",
    );
    assert!(
        e.contains("`.area()` on a `R`: `R` has no method `area` in this module"),
        "{e}"
    );
}

#[test]
fn references_that_cannot_be_places_are_refused_with_what_to_write() {
    let e = compile_err(
        "fn first(a: &u32) -> &u32 { a } \
         #[kernel] pub fn k(mut o: DisjointSlice<u32>) { let x = 1u32; let y = *first(&x); }",
    );
    assert!(e.contains("device helpers cannot return references"), "{e}");
    let e = compile_err(
        "struct Holder<'a> { r: &'a u32 } #[kernel] pub fn k(mut o: DisjointSlice<u32>) {}",
    );
    assert!(e.contains("a device struct cannot hold a reference"), "{e}");
    let e = compile_err(
        "fn f(mut a: &mut u32) { *a = 1; } \
         #[kernel] pub fn k(mut o: DisjointSlice<u32>) { let mut x = 0u32; f(&mut x); }",
    );
    assert!(e.contains("a reference parameter cannot be `mut`"), "{e}");
    let e = compile_err(
        "#[kernel] pub fn k(mut o: DisjointSlice<u32>) { let x = 1u32; let t = (&x, 2u32); }",
    );
    assert!(
        e.contains("a reference to a value is supported as an argument of a device helper"),
        "{e}"
    );
}

#[test]
fn impl_blocks_take_only_what_device_code_can_call() {
    let e = compile_err(
        "struct R { w: f32 } impl Default for R { fn default() -> R { R { w: 0.0 } } } \
         #[kernel] pub fn k(mut o: DisjointSlice<f32>) {}",
    );
    assert!(e.contains("only the operator traits"), "{e}");
    let e = compile_err(
        "struct R { w: f32 } impl R { const ONE: f32 = 1.0; } \
         #[kernel] pub fn k(mut o: DisjointSlice<f32>) {}",
    );
    assert!(e.contains("associated constants are not supported"), "{e}");
    let e = compile_err(
        "struct R { w: f32 } \
         impl core::ops::Add for R { type Output = R; fn add(self, o: R) -> R { R { w: self.w + o.w } } } \
         #[kernel] pub fn k(r: R, mut o: DisjointSlice<f32>) { let d = r - r; }",
    );
    assert!(e.contains("`R` has no `impl Sub`"), "{e}");
    let e = compile_err(
        "struct R { w: f32 } #[kernel] pub fn k(r: R, mut o: DisjointSlice<f32>) { let d = r == r; }",
    );
    assert!(e.contains("structs cannot be compared"), "{e}");
}

#[test]
fn a_mut_self_method_updates_its_receiver_place() {
    // `grow` writes through `&mut self` into the caller's `let mut` struct; `R::new` is an
    // associated function; `Self` names `R`.
    let m = compile_source(&module(
        "struct R { w: f32, h: f32 } \
         impl R { fn new(w: f32) -> Self { Self { w, h: 2.0 } } \
                  fn grow(&mut self, by: f32) { self.w += by; bump(&mut self.h); } \
                  fn area(&self) -> f32 { self.w * self.h } } \
         fn bump(x: &mut f32) { *x = *x + 1.0; } \
         #[kernel] pub fn k(mut o: DisjointSlice<f32>) { \
             let mut r = R::new(3.0); r.grow(1.0); R::grow(&mut r, 0.5); \
             if let Some(out) = o.get_mut(thread::index_1d()) { *out = r.area(); } }",
    ));
    assert!(m.is_ok(), "{:?}", m.err().map(|e| e.message));
}

#[test]
fn open_arrays_take_their_element_type_from_fragments_and_assignments() {
    // `acc` is an `[f32; 4]` because `mma` takes and gives one; `r` a `[u32; 4]` because
    // `ldmatrix_x4` gives one (not the literals' defaults `f64` and `i32`).
    let ir = compile_ok(
        r#"#[kernel] pub unsafe fn k(a: &[u32], mut out: DisjointSlice<f32>) {
            let i = thread::index_1d();
            let tile = SharedArray::<u16, 256>::uninit();
            let fa = [a[0], a[1], a[2], a[3]];
            let fb = [a[4], a[5]];
            let mut acc = [0.0; 4];
            acc = mma_m16n8k16_f16(fa, fb, acc);
            let mut r = [0; 4];
            r = ldmatrix_x4(&tile, 0);
            let mut one = 0;
            one = ldmatrix_x1(&tile, 8);
            if let Some(o) = out.get_mut(i) { *o = acc[0] + r[1] as f32 + one as f32; }
        }"#,
    );
    let locals: Vec<(ScalarType, u32)> = ir.kernels[0]
        .locals
        .iter()
        .map(|a| (a.elem, a.len))
        .collect();
    assert!(locals.contains(&(ScalarType::F32, 4)), "{locals:?}");
    assert!(
        !locals
            .iter()
            .any(|(t, _)| *t == ScalarType::F64 || *t == ScalarType::I32),
        "{locals:?}"
    );
}

#[test]
fn division_checks_name_the_expression_and_its_line() {
    let source = "mod kernels { use super::*;
        #[kernel] pub fn k(a: &[i32], b: &[u32], mut o: DisjointSlice<i32>) {
            let i = thread::index_1d();
            let q = a[0] / a[1];
            let mut r = b[0];
            r %= b[1];
            if let Some(o) = o.get_mut(i) { *o = q + r as i32; }
        }
    }";
    let ir = cuprum_front::compile_source(source).expect("compiles").ir;
    let text = print_kernel(&ir.kernels[0]);
    assert!(
        text.contains("DivideByZero { site: \"`a[0] / a[1]` at line 4\" }"),
        "{text}"
    );
    assert!(
        text.contains("DivideOverflow { site: \"`a[0] / a[1]` at line 4\" }"),
        "{text}"
    );
    assert!(
        text.contains("DivideByZero { site: \"`r %= b[1]` at line 6\" }"),
        "{text}"
    );
    // `u32` remainders cannot overflow.
    assert_eq!(text.matches("DivideOverflow").count(), 1, "{text}");
}

#[test]
fn the_embedded_source_keeps_every_token_on_its_line() {
    // What the macro embeds for the run-time compile: the same tokens on the same lines, so
    // run-time messages give the user's lines; and so the same IR as the original text.
    let source = "mod kernels { use super::*;
        const K: u32 = 3;
        /// Doc comments become `#[doc = ..]` attributes, on their line.
        #[kernel] pub fn k(a: &[u32], mut o: DisjointSlice<u32>) {
            let i = thread::index_1d();
            let t = a[0]
                / a[1];
            if let Some(o) = o.get_mut(i) { *o = t % K + (a[2] >> 1) / a[3]; }
        }
    }";
    let module: syn::ItemMod = syn::parse_str(source).expect("parses");
    let embedded = cuprum_front::module_source(&module);
    assert_eq!(
        source.lines().count(),
        embedded.lines().count(),
        "{embedded}"
    );
    for (k, (a, b)) in source.lines().zip(embedded.lines()).enumerate() {
        let squash = |s: &str| s.split_whitespace().collect::<String>();
        if a.trim_start().starts_with("///") {
            assert!(b.starts_with("# [ doc ="), "line {}:\n{embedded}", k + 1);
        } else {
            assert_eq!(squash(a), squash(b), "line {}:\n{embedded}", k + 1);
        }
    }
    let original = cuprum_front::compile_source(source).expect("compiles").ir;
    let rebuilt = cuprum_front::compile_source(&embedded)
        .expect("compiles")
        .ir;
    assert_eq!(original, rebuilt);
    let text = print_kernel(&rebuilt.kernels[0]);
    assert!(text.contains("`a[0] / a[1]` at line 6"), "{text}");
    assert!(text.contains("`(a[2] >> 1) / a[3]` at line 8"), "{text}");
}

/// `get_mut_2d` checks that `y * width + x` does not wrap only where ranges cannot prove it:
/// a 32-bit width (the hardware bounds the thread indices) needs no check, a `usize` one does.
#[test]
fn the_2d_overflow_check_is_emitted_only_where_a_wrap_is_possible() {
    let kernel = |width_ty: &str, width: &str| {
        format!(
            r#"
            #[kernel]
            #[launch_contract(domain = 2, block = (16, 16, 1))]
            pub fn mark(w: {width_ty}, mut out: DisjointSlice<u32>) {{
                if let Some(o) = out.get_mut_2d(thread::index_2d(), {width}) {{
                    *o = 1;
                }}
            }}"#
        )
    };
    let checks = |body: String| {
        let ir = compile_ok(&body);
        let text = print_kernel(&ir.kernels[0]);
        // The no-carry test of the linear index (`sum >= product`) is the check's mark.
        text.matches("cmp.Ge").count()
    };
    assert_eq!(checks(kernel("u32", "w as usize")), 0);
    assert_eq!(checks(kernel("usize", "w")), 1);
}

#[test]
fn println_becomes_a_printf_format_of_the_argument_types() {
    let ir = compile_ok(
        r#"
    #[kernel]
    #[launch_contract(domain = 1, block = (4, 1, 1))]
    pub fn report(x: &[f32], big: u64, mut out: DisjointSlice<i32>) {
        let i = thread::index_1d();
        let k = i.get();
        let id = k as i32 - 2;
        println!("{k}: v={:.3} id={:>4} big={} hex={:x} {{100%}}", x[k], id, big, k as u32 + 250);
        if let Some(o) = out.get_mut(i) {
            *o = id;
        }
    }
"#,
    );
    let text = print_kernel(&ir.kernels[0]);
    assert!(
        text.contains(r#""%llu: v=%.3f id=%4d big=%llu hex=%x {100%%}\n""#),
        "{text}"
    );
    let e = compile_err(
        r#"
    #[kernel]
    pub fn bad(mut out: DisjointSlice<i32>) {
        println!("{:^5}", 1i32);
    }
"#,
    );
    assert!(e.contains("unsupported format spec `{:^5}`"), "{e}");
}

#[test]
fn requires_relations_reach_the_ir_when_it_can_read_them() {
    use cuprum_ir::CmpOp;
    use cuprum_ir::requires::{Term, TermOp};
    let ir = compile_ok(
        "#[kernel] #[launch_contract(domain = 1, block = (64, 1, 1), \
         requires = (x.len() >= w * h, w > 0, x.len() >= s.n))] \
         pub fn k(x: &[f32], w: usize, h: u32, s: S, mut out: DisjointSlice<f32>) {} \
         #[derive(Clone, Copy)] pub struct S { pub n: usize }",
    );
    let k = &ir.kernels[0];
    // `s.n` is no parameter the IR's requirements read: that relation stays the host's.
    assert_eq!(k.requires.len(), 2, "{}", print_kernel(k));
    let r = &k.requires[0];
    assert_eq!((r.op, &r.left), (CmpOp::Ge, &Term::Len(0)));
    assert_eq!(
        r.right,
        Term::Bin(
            TermOp::Mul,
            Box::new(Term::Param(1)),
            Box::new(Term::Param(2))
        )
    );
    assert_eq!(r.text, "x.len() >= w * h");
    assert_eq!(
        (k.requires[1].op, &k.requires[1].right),
        (CmpOp::Gt, &Term::Const(0))
    );
}
