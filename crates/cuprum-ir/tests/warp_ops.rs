//! The IR rules of the statements that define several values or have effects only:
//! `Mma`, `LdMatrix`, `CpAsync*` and `Print`. Checks that the builder types them, that the
//! validator treats their results as definitions (once, typed, dominating their uses) and
//! rejects ill-formed ones, and what the printer writes.

use cuprum_ir::*;

fn u32c(b: &mut KernelBuilder, v: u32) -> Value {
    b.constant(Constant::u32(v))
}

fn f32c(b: &mut KernelBuilder, v: f32) -> Value {
    b.constant(Constant::f32(v))
}

/// A kernel with one of each new statement, built through the builder.
fn all_ops() -> Kernel {
    let mut b = KernelBuilder::new("warp_ops");
    let g = b.param(
        "g",
        ParamKind::Slice {
            elem: ScalarType::U8,
            access: SliceAccess::ReadOnly,
        },
    );
    b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: ScalarType::U16,
        len: 256,
    });
    let src = b.def(Op::SliceBase(g)).unwrap();
    let dst = b.def(Op::SharedAddr(0)).unwrap();
    b.cp_async(CpAsyncCache::Cg, 16, dst, src, None).unwrap();
    b.push(Stmt::CpAsyncCommit);
    b.push(Stmt::CpAsyncWaitGroup { pending: 0 });
    b.push(Stmt::CpAsyncWaitAll);
    b.push(Stmt::Barrier);
    let frags = b.ldmatrix(4, true, dst).unwrap();
    let c = f32c(&mut b, 0.0);
    let a = [frags[0], frags[1], frags[2], frags[3]];
    let d = b
        .mma(MmaShape::M16n8k16F16, a, [frags[0], frags[1]], [c; 4])
        .unwrap();
    let lane = b.def(Op::Special(Special::LaneId)).unwrap();
    b.print("%d", vec![d[0]]).unwrap_err();
    b.print("lane %u: d0 = %f, %lld\n", vec![lane, d[0], src])
        .unwrap();
    b.finish()
}

#[test]
fn builder_output_validates_and_prints() {
    let k = all_ops();
    validate_kernel(&k).unwrap();
    let text = print_kernel(&k);
    for line in [
        "cp.async.cg.16 shared[%1] <- global[%0]",
        "cp.async.commit_group",
        "cp.async.wait_group 0",
        "cp.async.wait_all",
        "%2: u32, %3: u32, %4: u32, %5: u32 = ldmatrix.x4.trans [%1]",
        "%7: f32, %8: f32, %9: f32, %10: f32 = mma.m16n8k16.f16 {%2, %3, %4, %5}, {%2, %3}, {%6, %6, %6, %6}",
        "print \"lane %u: d0 = %f, %lld\\n\", %11, %7, %0",
    ] {
        assert!(text.contains(line), "missing `{line}` in\n{text}");
    }
}

/// Replaces the first statement for which `f` returns `Some`.
fn edit(k: &Kernel, f: impl Fn(&Stmt) -> Option<Stmt>) -> Kernel {
    let mut k = k.clone();
    for s in &mut k.body.stmts {
        if let Some(n) = f(s) {
            *s = n;
            return k;
        }
    }
    panic!("no statement to edit");
}

fn invalid(k: &Kernel, needle: &str) {
    let e = validate_kernel(k).expect_err("kernel should be invalid");
    assert!(
        e.message.contains(needle),
        "`{}` lacks `{needle}`",
        e.message
    );
}

#[test]
fn results_are_definitions() {
    let k = all_ops();
    // Operands of the wrong type.
    invalid(
        &edit(&k, |s| match s {
            Stmt::Mma { shape, b, c, d, .. } => Some(Stmt::Mma {
                shape: *shape,
                a: *c,
                b: *b,
                c: *c,
                d: *d,
            }),
            _ => None,
        }),
        "operand a[0] must be u32, got f32",
    );
    // A result used as its own operand does not dominate.
    invalid(
        &edit(&k, |s| match s {
            Stmt::Mma { shape, a, b, d, .. } => Some(Stmt::Mma {
                shape: *shape,
                a: *a,
                b: *b,
                c: *d,
                d: *d,
            }),
            _ => None,
        }),
        "does not dominate",
    );
    // A value defined by two statements.
    invalid(
        &edit(&k, |s| match s {
            Stmt::LdMatrix { trans, addr, d } => Some(Stmt::LdMatrix {
                trans: *trans,
                addr: *addr,
                d: vec![d[0], d[0], d[2], d[3]],
            }),
            _ => None,
        }),
        "defined twice",
    );
    // Results whose declared type is not the statement's.
    invalid(
        &edit(&k, |s| match s {
            Stmt::Mma { shape, a, b, c, d } => Some(Stmt::Mma {
                shape: *shape,
                a: *a,
                b: *b,
                c: *c,
                d: [a[0], d[1], d[2], d[3]],
            }),
            _ => None,
        }),
        "declared u32 but the mma gives f32",
    );
    // A result that is never defined once its statement is gone.
    let mut gone = k.clone();
    gone.body.stmts.retain(|s| !matches!(s, Stmt::Print { .. }));
    gone.body.stmts.retain(|s| !matches!(s, Stmt::Mma { .. }));
    invalid(&gone, "never defined");
}

#[test]
fn operand_rules() {
    let k = all_ops();
    invalid(
        &edit(&k, |s| match s {
            Stmt::LdMatrix { trans, addr, d } => Some(Stmt::LdMatrix {
                trans: *trans,
                addr: *addr,
                d: d[..3].to_vec(),
            }),
            _ => None,
        }),
        "1, 2 or 4",
    );
    invalid(
        &edit(&k, |s| match s {
            Stmt::CpAsync { dst, src, .. } => Some(Stmt::CpAsync {
                cache: CpAsyncCache::Cg,
                size: 8,
                dst: *dst,
                src: *src,
                src_size: None,
            }),
            _ => None,
        }),
        "cannot copy 8 bytes",
    );
    invalid(
        &edit(&k, |s| match s {
            Stmt::CpAsync { dst, src, .. } => Some(Stmt::CpAsync {
                cache: CpAsyncCache::Ca,
                size: 4,
                dst: *src,
                src: *dst,
                src_size: None,
            }),
            _ => None,
        }),
        "Shared address must be u32",
    );
    invalid(
        &edit(&k, |s| match s {
            Stmt::Print { args, .. } => Some(Stmt::Print {
                format: "%d %s".into(),
                args: args[..2].to_vec(),
            }),
            _ => None,
        }),
        "`%s` is not a supported conversion",
    );
    invalid(
        &edit(&k, |s| match s {
            Stmt::Print { args, .. } => Some(Stmt::Print {
                format: "%d %d %d".into(),
                args: args.clone(),
            }),
            _ => None,
        }),
        "argument 1 is f32",
    );
}

#[test]
fn builder_rejects_ill_typed_operands() {
    let mut b = KernelBuilder::new("bad");
    let x = u32c(&mut b, 1);
    let f = f32c(&mut b, 1.0);
    assert!(
        b.mma(MmaShape::M16n8k8Tf32, [f; 4], [x; 2], [f; 4])
            .is_err()
    );
    assert!(
        b.mma(MmaShape::M16n8k8Tf32, [x; 4], [x; 2], [x; 4])
            .is_err()
    );
    assert!(b.ldmatrix(3, false, x).is_err());
    assert!(b.ldmatrix(1, false, f).is_err());
    assert!(b.print("%f", vec![x]).is_err());
    assert!(b.print("%u %g", vec![x, f]).is_ok());
    let d = b
        .mma(MmaShape::M16n8k8Tf32, [x; 4], [x; 2], [f; 4])
        .unwrap();
    assert_eq!(b.type_of(d[3]), ScalarType::F32);
}
