//! What goes wrong is an error, never a wrong answer: unequal `zip` lengths, vectors of
//! another device, traced values used outside their chain; and what is empty gives an empty
//! output or the identity.

mod common;

use std::cell::Cell;

use common::{device, ok};
use cuprum_iter::prelude::*;

#[track_caller]
fn expect_err<T: std::fmt::Debug>(r: GpuResult<T>, needle: &str) -> GpuError {
    match r {
        Ok(v) => panic!("expected an error containing `{needle}`, got Ok({v:?})"),
        Err(e) => {
            assert!(e.to_string().contains(needle), "`{e}` lacks `{needle}`");
            e
        }
    }
}

#[test]
fn zip_of_unequal_lengths_is_an_error_not_a_truncation() {
    let device = device();
    let a = ok(device.upload(&[1.0f32, 2.0, 3.0]));
    let b = ok(device.upload(&[1.0f32, 2.0]));
    let before = device.stats();
    let e = expect_err((&a).zip(&b).map(|(x, y)| x + y).collect(&device), "zip");
    assert!(matches!(
        e,
        GpuError::LengthMismatch {
            expected: 3,
            actual: 2,
            ..
        }
    ));
    expect_err((&b).zip(&a).map(|(x, y)| x + y).sum(), "equal lengths");
    expect_err((&a).zip(&a).zip(&b).map(|((x, _), _)| x).count(), "zip");
    expect_err(
        (&a).zip(&b).map(|(x, _)| x).filter(|x| x.gt(0.0)).min(),
        "zip",
    );
    assert_eq!(device.stats(), before, "nothing ran, nothing was allocated");
}

#[test]
fn vectors_of_another_device_are_refused() {
    let one = device();
    let two = device();
    let a = ok(one.upload(&[1.0f32, 2.0]));
    let b = ok(two.upload(&[1.0f32, 2.0]));
    expect_err((&a).zip(&b).map(|(x, y)| x + y).collect(&one), "another");
    expect_err((&a).map(|x| x + 1.0).collect(&two), "another");
    assert_eq!(ok((&a).map(|x| x + 1.0).collect(&one)), vec![2.0, 3.0]);
}

#[test]
fn traced_values_cannot_escape_their_chain() {
    let device = device();
    let a = ok(device.upload(&[1.0f32, 2.0]));
    let kept: Cell<Option<Expr<f32>>> = Cell::new(None);
    let first = ok((&a)
        .map(|x| {
            kept.set(Some(x));
            x
        })
        .collect(&device));
    assert_eq!(first, vec![1.0, 2.0]);
    let Some(stale) = kept.get() else {
        panic!("the closure ran");
    };
    expect_err(
        (&a).map(move |x| x + stale).collect(&device),
        "another chain",
    );
    // Computed outside any closure.
    let outside = Expr::lit(2.0f32) * 3.0;
    expect_err((&a).map(move |x| x * outside).sum(), "outside");
    // A plain host value is the right way, and works.
    let host = 2.0f32 * 3.0;
    assert_eq!(ok((&a).map(move |x| x * host).sum()), 18.0);
}

#[test]
fn empty_inputs_give_empty_outputs_or_identities() {
    let device = device();
    let e = ok(device.upload::<f32>(&[]));
    let f = ok(device.upload::<f32>(&[]));
    let before = device.stats();
    assert!(ok((&e).zip(&f).map(|(x, y)| x * y).collect(&device)).is_empty());
    assert!(ok((&e).filter(|x| x.gt(0.0)).collect(&device)).is_empty());
    assert!(ok((&e).map(|x| x + 1.0).materialize(&device)).is_empty());
    assert_eq!(ok((&e).sum()), 0.0);
    assert_eq!(ok((&e).min()), None);
    assert_eq!(ok((&e).filter(|x| x.gt(0.0)).max()), None);
    assert_eq!(ok((&e).reduce(7.5, |a, b| a * b)), 7.5);
    assert_eq!(ok((&e).count()), 0);
    assert_eq!(ok((&e).filter(|x| x.gt(0.0)).count()), 0);
    assert_eq!(
        device.stats().launches,
        before.launches,
        "nothing to launch"
    );
    assert_eq!(ok(ok((&e).sum_on_device()).to_vec()), vec![0.0]);
}
