//! Integer division by zero and signed `MIN / -1` (and `%`) stop the kernel as Rust panics,
//! and the error says which operation and where: `attempt to divide by zero in `x / y` at line
//! N`, `attempt to divide with overflow ...`. The emulator also names the block and the thread;
//! a nested array's inner index is checked against its own dimension. Alone in its test binary:
//! on a GPU the first trap leaves the CUDA context unusable, as CUDA specifies, so there only
//! the first failure is checked (as a fault naming the kernel).

mod common;

use common::{assert_same, random_i32};
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{DeviceBuffer, Error, LaunchConfig1D, cuda_module};
use cuprum_emu::EmuError;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn divide(a: &[i32], b: &[i32], mut q: DisjointSlice<i32>) {
        let i = thread::index_1d();
        if let Some(o) = q.get_mut(i) {
            let (x, y) = (a[i.get()], b[i.get()]);
            *o = x / y;
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn remainder(a: &[u32], b: &[u32], mut r: DisjointSlice<u32>) {
        let i = thread::index_1d();
        if let Some(o) = r.get_mut(i) {
            let mut x = a[i.get()];
            x %= b[i.get()];
            *o = x;
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn signed_remainder(a: &[i64], b: &[i64], mut r: DisjointSlice<i64>) {
        let i = thread::index_1d();
        if let Some(o) = r.get_mut(i) {
            *o = a[i.get()] % b[i.get()];
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn nested_index(ix: &[usize], mut o: DisjointSlice<i32>) {
        let i = thread::index_1d();
        let mut m = [[0i32; 4]; 3];
        m[ix[0]][ix[1]] = 1;
        if let Some(o) = o.get_mut(i) {
            *o = m[1][0];
        }
    }
}

/// The line of this file that holds `text` (the kernels' lines, as the errors give them).
fn line_of(text: &str) -> usize {
    let source = include_str!("device_divide.rs");
    match source.lines().position(|l| l.contains(text)) {
        Some(k) => k + 1,
        None => panic!("`{text}` is not in this file"),
    }
}

/// The emulator's error of a failed launch (`None` on a GPU, after checking the fault names
/// `kernel`).
fn emulator_error(result: cuprum::Result<()>, kernel: &str) -> Option<EmuError> {
    match result {
        Err(Error::Emulator { kernel: k, source }) => {
            assert_eq!(k, kernel);
            Some(source)
        }
        Err(Error::KernelFault { kernel: k, .. }) => {
            assert_eq!(k, kernel);
            None
        }
        Err(other) => panic!("unexpected error: {other}"),
        Ok(()) => panic!("the failed check in `{kernel}` went unnoticed"),
    }
}

#[test]
fn integer_division_by_zero_and_overflow_name_the_expression() -> cuprum::Result<()> {
    let ctx = common::ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 200;
    let config = LaunchConfig1D::new(4, 64, 0);
    let a = random_i32(n);
    let mut b: Vec<i32> = random_i32(n).iter().map(|v| v | 1).collect();
    b.iter_mut().filter(|v| **v == -1).for_each(|v| *v = 3);
    let (da, mut db) = (
        DeviceBuffer::from_host(&stream, &a)?,
        DeviceBuffer::from_host(&stream, &b)?,
    );
    let mut q = DeviceBuffer::from_host(&stream, &vec![i32::MIN; n])?;
    let prepared = m.prepare_divide(config)?;
    // No zero divisor, no `MIN / -1`: Rust's quotients.
    m.divide(&stream, &prepared, &da, &db, &mut q)?;
    let want: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x / y).collect();
    assert_same("quotients", &q.to_host_vec(&stream)?, &want);

    // Thread 77 (block 1, thread 13) divides by zero.
    let div_line = line_of("*o = x / y;");
    b[77] = 0;
    db.copy_from_host(&stream, &b)?;
    let result = m
        .divide(&stream, &prepared, &da, &db, &mut q)
        .and_then(|()| stream.synchronize());
    let Some(e) = emulator_error(result, "divide") else {
        return Ok(()); // on a GPU the context is gone now
    };
    assert!(matches!(e, EmuError::DivideByZero { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "kernel `divide`, block [1, 0, 0], thread [13, 0, 0]: attempt to divide by zero in \
             `x / y` at line {div_line}"
        )
    );

    // Thread 5 divides `i32::MIN` by -1.
    let mut a2 = a.clone();
    (a2[5], b[5], b[77]) = (i32::MIN, -1, 7);
    let da2 = DeviceBuffer::from_host(&stream, &a2)?;
    db.copy_from_host(&stream, &b)?;
    let e = emulator_error(m.divide(&stream, &prepared, &da2, &db, &mut q), "divide");
    let e = e.expect("an emulator error");
    assert!(matches!(e, EmuError::DivideOverflow { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "kernel `divide`, block [0, 0, 0], thread [5, 0, 0]: attempt to divide with overflow \
             (the signed `MIN` by -1) in `x / y` at line {div_line}"
        )
    );

    // `%=` by zero, unsigned.
    let mut bu = vec![3u32; n];
    bu[130] = 0;
    let (dau, dbu) = (
        DeviceBuffer::from_host(&stream, &vec![10u32; n])?,
        DeviceBuffer::from_host(&stream, &bu)?,
    );
    let mut r = DeviceBuffer::from_host(&stream, &vec![u32::MAX; n])?;
    let result = m.remainder(&stream, &m.prepare_remainder(config)?, &dau, &dbu, &mut r);
    let e = emulator_error(result, "remainder").expect("an emulator error");
    assert!(matches!(e, EmuError::DivideByZero { .. }), "{e:?}");
    assert!(
        e.to_string().ends_with(&format!(
            "thread [2, 0, 0]: attempt to divide by zero in `x %= b[i.get()]` at line {}",
            line_of("x %= b[i.get()];")
        )),
        "{e}"
    );

    // `i64::MIN % -1` overflows too (Rust panics on it, though the remainder would be 0).
    let (mut a64, mut b64) = (vec![9i64; n], vec![4i64; n]);
    (a64[199], b64[199]) = (i64::MIN, -1);
    let (da64, db64) = (
        DeviceBuffer::from_host(&stream, &a64)?,
        DeviceBuffer::from_host(&stream, &b64)?,
    );
    let mut r64 = DeviceBuffer::from_host(&stream, &vec![i64::MAX; n])?;
    let result = m.signed_remainder(
        &stream,
        &m.prepare_signed_remainder(config)?,
        &da64,
        &db64,
        &mut r64,
    );
    let e = emulator_error(result, "signed_remainder").expect("an emulator error");
    assert!(matches!(e, EmuError::DivideOverflow { .. }), "{e:?}");
    assert!(
        e.to_string().ends_with(&format!(
            "thread [7, 0, 0]: attempt to divide with overflow (the signed `MIN` by -1) in \
             `a[i.get()] % b[i.get()]` at line {}",
            line_of("*o = a[i.get()] % b[i.get()];")
        )),
        "{e}"
    );

    // `m[0][4]` of a `[[i32; 4]; 3]` is past its row, though inside the flat array.
    let ix = DeviceBuffer::from_host(&stream, &[0usize, 4])?;
    let mut o = DeviceBuffer::from_host(&stream, &vec![-1i32; 64])?;
    let result = m.nested_index(
        &stream,
        &m.prepare_nested_index(LaunchConfig1D::new(1, 64, 0))?,
        &ix,
        &mut o,
    );
    let e = emulator_error(result, "nested_index").expect("an emulator error");
    assert!(
        matches!(&e, EmuError::BoundsCheck { index: 4, len: 4, site, .. } if site == "m[ix[0]][ix[1]]"),
        "{e:?}"
    );
    Ok(())
}
