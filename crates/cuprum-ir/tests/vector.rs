//! The IR rules of `VectorLoad` and `VectorStore`: 2 or 4 elements of one non-`bool` type,
//! at most 16 bytes, results defined once and typed; what the printer writes.

use cuprum_ir::*;

fn kernel_with_slice() -> (KernelBuilder, Value) {
    let mut b = KernelBuilder::new("vectors");
    let g = b.param(
        "g",
        ParamKind::Slice {
            elem: ScalarType::F32,
            access: SliceAccess::ReadWrite,
        },
    );
    let base = b.def(Op::SliceBase(g)).unwrap();
    (b, base)
}

#[test]
fn builder_types_results_and_the_validator_accepts_them() {
    let (mut b, base) = kernel_with_slice();
    let d = b
        .vector_load(AddressSpace::Global, ScalarType::F32, base, 4)
        .unwrap();
    assert_eq!(d.len(), 4);
    let sum = b.def(Op::Binary(BinaryOp::Add, d[0], d[3])).unwrap();
    b.vector_store(AddressSpace::Global, base, vec![sum, d[1], d[2], d[0]])
        .unwrap();
    let halves = b
        .vector_load(AddressSpace::Global, ScalarType::F64, base, 2)
        .unwrap();
    b.vector_store(AddressSpace::Global, base, halves).unwrap();
    let k = b.finish();
    validate_kernel(&k).unwrap();
    for &v in &d {
        assert_eq!(k.values.try_get(v).map(|d| d.ty), Some(ScalarType::F32));
    }
    let text = print_kernel(&k);
    for line in [
        "%1: f32, %2: f32, %3: f32, %4: f32 = load.Global.v4.f32 [%0]",
        "store.Global.v4 [%0] = {%5, %2, %3, %1}",
        "load.Global.v2.f64 [%0]",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
}

#[test]
fn ill_formed_vector_accesses_are_refused() {
    let (mut b, base) = kernel_with_slice();
    let f = b.constant(Constant::f32(1.0));
    let u = b.constant(Constant::u32(1));
    let t = b.constant(Constant::bool(true));
    let load = |b: &mut KernelBuilder, ty, lanes| {
        b.vector_load(AddressSpace::Global, ty, base, lanes)
            .unwrap_err()
            .reason
    };
    assert!(load(&mut b, ScalarType::F32, 3).contains("2 or 4"));
    assert!(load(&mut b, ScalarType::F32, 8).contains("2 or 4"));
    assert!(load(&mut b, ScalarType::Bool, 4).contains("bool"));
    assert!(load(&mut b, ScalarType::F64, 4).contains("16 bytes"));
    let shared_addr_is_u32 = b
        .vector_load(AddressSpace::Shared, ScalarType::F32, base, 2)
        .unwrap_err();
    assert!(
        shared_addr_is_u32.reason.contains("address"),
        "{shared_addr_is_u32}"
    );
    let store = |b: &mut KernelBuilder, values: Vec<Value>| {
        b.vector_store(AddressSpace::Global, base, values)
            .unwrap_err()
            .reason
    };
    assert!(store(&mut b, vec![f, u]).contains("must be f32"));
    assert!(store(&mut b, vec![t, t]).contains("bool"));
    assert!(store(&mut b, vec![f]).contains("2 or 4"));
    assert!(store(&mut b, vec![]).contains("needs values"));

    // The validator refuses a result used before the load defines it.
    let mut k = b.finish();
    let ghost = k.values.append(ValueDef {
        ty: ScalarType::F32,
    });
    let other = k.values.append(ValueDef {
        ty: ScalarType::F32,
    });
    k.body.stmts.push(Stmt::VectorStore {
        space: AddressSpace::Global,
        addr: base,
        values: vec![ghost, other],
    });
    k.body.stmts.push(Stmt::VectorLoad {
        space: AddressSpace::Global,
        ty: ScalarType::F32,
        addr: base,
        d: vec![ghost, other],
        eviction: Eviction::Normal,
    });
    assert!(validate_kernel(&k).is_err());
}

#[test]
fn eviction_hints_print_and_only_global_loads_take_them() {
    let (mut b, base) = kernel_with_slice();
    let d = b
        .vector_load_evicting(
            AddressSpace::Global,
            ScalarType::F32,
            base,
            4,
            Eviction::Last,
        )
        .unwrap();
    let one = b
        .def(Op::Load {
            space: AddressSpace::Global,
            ty: ScalarType::F32,
            addr: base,
            eviction: Eviction::First,
        })
        .unwrap();
    let s = b.def(Op::Binary(BinaryOp::Add, d[0], one)).unwrap();
    b.push(Stmt::Store {
        space: AddressSpace::Global,
        addr: base,
        value: s,
    });
    let shared = b.shared_array(ArrayDecl {
        name: "s".into(),
        elem: ScalarType::F32,
        len: 4,
    });
    let at = b.def(Op::SharedAddr(shared)).unwrap();
    let refused = b
        .vector_load_evicting(AddressSpace::Shared, ScalarType::F32, at, 4, Eviction::Last)
        .unwrap_err();
    assert!(refused.reason.contains("only global loads"), "{refused}");
    let refused = b
        .def(Op::Load {
            space: AddressSpace::Shared,
            ty: ScalarType::F32,
            addr: at,
            eviction: Eviction::First,
        })
        .unwrap_err();
    assert!(refused.reason.contains("only global loads"), "{refused}");
    let k = b.finish();
    validate_kernel(&k).unwrap();
    let text = print_kernel(&k);
    assert!(
        text.contains("= load.Global.evict_last.v4.f32 [%"),
        "{text}"
    );
    assert!(text.contains("= load.Global.evict_first.f32 [%"), "{text}");
}
