//! Generic device structs in the front end: each instantiation is its own struct with its
//! own layout, its arguments inferred as rustc infers them (path, receiver, arguments,
//! annotation, later method calls), and the messages for what stays refused. (The kernels
//! run, against references, in `crates/cuprum/tests/simt_generic_structs.rs`.)

use cuprum_front::layout::{ElemType, per_parameter_size};
use cuprum_front::{ParamType, compile_source};
use cuprum_ir::ScalarType;

fn module(body: &str) -> String {
    format!("mod kernels {{ use super::*; {body} }}")
}

#[track_caller]
fn compile_ok(body: &str) -> cuprum_front::CompiledModule {
    match compile_source(&module(body)) {
        Ok(m) => m,
        Err(e) => panic!("expected to compile, got: {e}"),
    }
}

#[track_caller]
fn compile_err(body: &str) -> String {
    match compile_source(&module(body)) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.message,
    }
}

const ACC: &str = "
    #[derive(Clone, Copy)]
    pub struct Acc<T> { pub sum: T, pub count: u32 }
    impl<T: Num> Acc<T> {
        pub fn new() -> Self { Self { sum: T::ZERO, count: 0 } }
        pub fn add(&mut self, x: T) { self.sum += x; self.count += 1; }
        pub fn mean(&self) -> T { self.sum / (self.count as T) }
    }";

/// `Acc<f32>` and `Acc<f64>` elements are laid out each on its own: 8 and 16 bytes.
#[test]
fn each_instantiation_has_its_own_layout() {
    let m = compile_ok(&format!(
        "{ACC}
        #[kernel]
        pub unsafe fn k(a: &[Acc<f32>], b: &[Acc<f64>], out: &mut [f32]) {{
            out[0] = a[0].sum + b[0].sum as f32;
        }}"
    ));
    let elems: Vec<(String, u64)> = m.info.kernels[0]
        .params
        .iter()
        .filter_map(|p| match &p.ty {
            ParamType::Elements { elem, .. } => Some((elem.rust_name(), elem.layout().size)),
            _ => None,
        })
        .collect();
    assert_eq!(
        elems,
        vec![("Acc<f32>".to_string(), 8), ("Acc<f64>".to_string(), 16)]
    );
}

/// A struct passed by value is one launch argument per scalar field, of the instance's
/// types.
#[test]
fn struct_parameters_take_the_instance_field_types() {
    let m = compile_ok(
        "#[derive(Clone, Copy)] pub struct Pair<A, B> { pub a: A, pub b: B }
        #[kernel]
        pub unsafe fn k(p: Pair<u16, f64>, out: &mut [f64]) { out[0] = p.b + p.a as f64; }",
    );
    match &m.info.kernels[0].params[0].ty {
        ParamType::Struct { name, fields } => {
            assert_eq!(name, "Pair<u16, f64>");
            assert_eq!(
                fields,
                &vec![
                    ("a".to_string(), ScalarType::U16),
                    ("b".to_string(), ScalarType::F64)
                ]
            );
        }
        other => panic!("expected a struct parameter, got {other:?}"),
    }
}

/// Every way rustc infers a generic struct's argument that device code follows: the path,
/// the annotation, the field values, the receiver, and a later method call's arguments.
#[test]
fn arguments_are_inferred_from_path_annotation_fields_and_later_calls() {
    compile_ok(&format!(
        "{ACC}
        #[kernel]
        pub unsafe fn k(x: &[f64], out: &mut [f64]) {{
            let mut a = Acc::<f64>::new();
            a.add(x[0]);
            let mut b: Acc<f64> = Acc::new();
            b.add(x[1]);
            let c = Acc {{ sum: x[2], count: 1 }};
            let mut d = Acc::new();
            d.add(x[3]);
            out[0] = a.mean() + b.mean() + c.mean() + d.mean();
        }}"
    ));
}

/// The generic kernel's layout cases: one per size of its type parameter.
#[test]
fn generic_elements_are_laid_out_per_parameter_size() {
    let module: syn::ItemMod = syn::parse_str(&module(ACC)).expect("module");
    let Some((_, items)) = &module.content else {
        panic!("inline module")
    };
    let structs: Vec<syn::ItemStruct> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Struct(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let ty: syn::Type = syn::parse_str("Acc<T>").expect("type");
    let cases = per_parameter_size(&ty, &["T".to_string()], &structs, &[]);
    let sizes: Vec<(u64, u64, Vec<u64>)> = cases
        .iter()
        .map(|(s, e)| (s[0], e.layout().size, e.offsets()))
        .collect();
    assert_eq!(
        sizes,
        vec![
            (1, 8, vec![0, 4]),
            (2, 8, vec![0, 4]),
            (4, 8, vec![0, 4]),
            (8, 16, vec![0, 8]),
        ]
    );
    assert!(matches!(cases[0].1, ElemType::Struct { .. }));
}

#[test]
fn refusals_say_what_to_write_instead() {
    let e = compile_err(
        "#[derive(Clone, Copy)] pub struct V<T> { pub x: T }
        impl<T: num_traits::Float> V<T> { pub fn get(self) -> T { self.x } }",
    );
    assert!(e.contains("cannot meet") && e.contains("Num"), "{e}");
    let e = compile_err("pub struct M<F: Fn(f32) -> f32> { pub f: F }");
    assert!(e.contains("not plain data"), "{e}");
    let e = compile_err("pub struct O { pub f: Box<dyn Fn(f32) -> f32> }");
    assert!(e.contains("trait object"), "{e}");
    let e = compile_err(&format!(
        "{ACC}
        #[kernel]
        pub unsafe fn k(x: &[f32], out: &mut [f32]) {{
            let mut a = Acc::new();
            a.sum = x[0];
            out[0] = a.sum;
        }}"
    ));
    assert!(e.contains("Acc::<f32>::new"), "{e}");
    let e = compile_err(
        "#[derive(Clone, Copy)] pub struct W<const N: usize> { pub v: [f32; N] }
        #[kernel]
        pub unsafe fn k(w: W<4>, out: &mut [f32]) { out[0] = w.v[0]; }",
    );
    assert!(e.contains("pass such structs in a slice"), "{e}");
}

/// A helper's result type names the instance its value makes: `Acc::new()` as the tail or
/// in a `return`, and a binding made so.
#[test]
fn a_helper_result_type_names_the_instance() {
    compile_ok(&format!(
        "{ACC}
        pub fn fresh<T: Num>() -> Acc<T> {{ Acc::new() }}
        pub fn early<T: Num>(skip: bool) -> Acc<T> {{
            if skip {{
                return Acc::new();
            }}
            let mut a = Acc::new();
            a.count = 3;
            a
        }}
        #[kernel]
        pub unsafe fn k(x: &[f64], out: &mut [f64]) {{
            let mut a: Acc<f64> = fresh();
            a.add(x[0]);
            let b: Acc<f64> = early(x[1] > 0.0);
            out[0] = a.mean() + b.sum;
        }}"
    ));
}
