//! Every kind of kernel the iterator track generates, for several element types, written as
//! PTX for sm_80 and sm_90 and assembled by `ptxas` (when it is installed; see
//! `cuprum_testkit::ptxas`). The chains run on whatever backend `CUPRUM_DEVICE` selects first,
//! which also checks their results; the PTX check then covers every compiled module.

mod common;

use common::{device, ok};
use cuprum_iter::prelude::*;
use cuprum_ptx::Target;
use half::{bf16, f16};

#[test]
fn generated_kernels_assemble_for_every_target() {
    let device = device();
    let f = ok(device.upload(&[1.5f32, -2.0, 3.25, 0.0, 7.0]));
    let g = ok(device.upload(&[0.5f32, 4.0, -1.0, 2.0, 1.0]));
    let d = ok(device.upload(&[1.0f64, 2.0, 3.0, 4.0, 5.0]));
    let i = ok(device.upload(&[1i64, -2, 3, -4, 5]));
    let b = ok(device.upload(&[1u8, 2, 3, 4, 255]));
    let h = ok(device.upload(&[f16::ONE, f16::NEG_ONE, f16::ZERO, f16::MAX, f16::MIN]));
    let bh = ok(device.upload(&[bf16::ONE; 5]));

    assert_eq!(
        ok((&f).zip(&g).map(|(x, y)| x + y).collect(&device)),
        vec![2.0, 2.0, 2.25, 2.0, 8.0]
    );
    ok((&f)
        .map(|x| (x.exp() + x.sin()).sqrt().mul_add(2.0, x.tanh()))
        .collect(&device));
    ok((&f).filter(|x| x.gt(0.0)).collect(&device));
    assert_eq!(ok((&f).zip(&g).map(|(x, y)| x * y).sum()), -3.5);
    assert_eq!(ok((&f).filter(|x| x.gt(0.0)).min()), Some(1.5));
    ok((&d).map(|x| x.sqrt() / 3.0).collect(&device));
    assert_eq!(ok((&d).max()), Some(5.0));
    ok((&i)
        .zip(&d)
        .map(|(x, y)| x.cast::<f64>() * y)
        .filter(|v| v.lt(0.0))
        .collect(&device));
    assert_eq!(ok((&i).map(|x| x / 3 + x % 5).sum()), -1);
    ok((&b).map(|x| (x >> 1u32) ^ x).collect(&device));
    assert_eq!(ok((&b).reduce(0u8, |p, q| p | q)), 255);
    assert_eq!(ok((&b).filter(|x| x.gt(3)).count()), 2);
    ok((&h)
        .map(|x| x * f16::from_f32(2.0) + x.exp())
        .collect(&device));
    assert_eq!(ok((&h).max()), Some(f16::MAX));
    ok((&bh).map(|x| x.sqrt()).sum());
    ok((&f)
        .enumerate()
        .map(|(k, x)| x.gt(1.0) & k.lt(3))
        .collect(&device));
    assert!(ok((&f).map(|x| x.gt(1.0)).reduce(false, |p, q| p | q)));

    let modules = device.compiled_modules();
    assert!(modules.len() >= 20, "{} modules", modules.len());
    for module in &modules {
        for target in [Target::Sm80, Target::Sm90] {
            let ptx = match cuprum_ptx::write_module(module, target) {
                Ok(p) => p,
                Err(e) => panic!(
                    "PTX for {}: {e}\n{}",
                    target.name(),
                    cuprum_ir::print_module(module)
                ),
            };
            if let Err(e) = cuprum_testkit::ptxas::check(&ptx, target.name()) {
                panic!("{e}\n{ptx}");
            }
        }
    }
}

#[test]
fn default_kernels_move_16_byte_vectors() {
    let device = device();
    let a = ok(device.upload(&vec![1.0f32; 1000]));
    let b = ok(device.upload(&vec![2.0f32; 1000]));
    ok((&a).zip(&b).map(|(x, y)| x + y).collect(&device));
    ok((&a).sum());
    let modules = device.compiled_modules();
    let ptx: String = modules
        .iter()
        .map(|m| cuprum_ptx::write_module(m, Target::Sm90).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    for s in ["ld.global.nc.v4.f32", "st.global.v4.f32"] {
        assert!(ptx.contains(s), "{s} missing:\n{ptx}");
    }
}
