//! The constructors of `api` that fill tensors from formulas: `linspace`, `eye`, `eye_rect`
//! (and the shapes at their edges), against plain Rust.

use cuprum::tile::prelude::*;

#[test]
fn linspace_and_identities_hold_what_their_formulas_say() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let v = api::linspace(-1.0, 2.0, 7).sync_on(&stream)?;
    assert_eq!(v.shape(), &[7]);
    let got = v.to_host_vec().sync_on(&stream)?;
    let want: Vec<f32> = (0..7).map(|i| -1.0 + i as f32 * 0.5).collect();
    assert_eq!(got, want);
    let one = api::linspace(3.0, 9.0, 1).to_host_vec().sync_on(&stream)?;
    assert_eq!(one, vec![3.0]);
    let odd = api::linspace(0.1, 0.7, 3).to_host_vec().sync_on(&stream)?;
    assert_eq!(odd.last(), Some(&0.7), "the last value is `stop` exactly");

    for (rows, cols) in [(4usize, 4usize), (3, 5), (6, 2), (1, 1)] {
        let m = api::eye_rect(rows, cols).sync_on(&stream)?;
        assert_eq!(m.shape(), &[rows, cols]);
        let got = m.to_host_vec().sync_on(&stream)?;
        let want: Vec<f32> = (0..rows * cols)
            .map(|i| f32::from(u8::from(i / cols == i % cols)))
            .collect();
        assert_eq!(got, want, "{rows} x {cols}");
    }
    let i4 = api::eye(4).to_host_vec().sync_on(&stream)?;
    assert_eq!(i4.iter().filter(|&&v| v == 1.0).count(), 4);
    assert_eq!(i4.iter().sum::<f32>(), 4.0);
    Ok(())
}
