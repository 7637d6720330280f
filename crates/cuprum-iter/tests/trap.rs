//! An integer division by zero in a closure stops the kernel with an error, as Rust would
//! panic, instead of giving garbage. Its own test binary (its own process): on a GPU a
//! trapped kernel leaves the CUDA context unusable for the rest of the process.

mod common;

use common::{device, ok};
use cuprum_iter::prelude::*;
use cuprum_runtime::BackendKind;

#[test]
fn integer_division_by_zero_is_an_error() {
    let device = device();
    let a = ok(device.upload(&[10i32, 20, 30, 40]));
    let b = ok(device.upload(&[1i32, 2, 0, 4]));
    let err = match (&a).zip(&b).map(|(x, y)| x / y).collect(&device) {
        Ok(v) => panic!("division by zero gave {v:?}"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("iter_map"),
        "the error names the kernel: {err}"
    );
    if device.context().backend() == BackendKind::Emulator {
        assert!(err.contains("division"), "{err}");
        let e = (&a).zip(&b).map(|(x, y)| x % y).sum();
        assert!(e.is_err_and(|e| e.to_string().contains("remainder")));
        let m = ok(device.upload(&[i32::MIN]));
        let e = (&m).map(|x| x / -1).collect(&device);
        assert!(e.is_err_and(|e| e.to_string().contains("overflow")));
    }
}
