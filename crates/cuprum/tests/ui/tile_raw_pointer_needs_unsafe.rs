// A tile entry over raw pointers is `unsafe` to call: its caller promises that no two tile
// blocks race on an element (E0133 without an `unsafe` block). A raw pointer parameter in
// a safe entry is refused where it is declared.
use cuprum::tile::prelude::*;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    unsafe fn fill(out: *mut f32, len: i32) {
        let base: PointerTile<*mut f32, { [] }> = pointer_to_tile(out);
        let ptrs = base.reshape(const_shape![1]).broadcast(const_shape![4]);
        store_ptr_tko(ptrs, constant(1.0f32, const_shape![4]), None, Latency::<0>);
    }
}

#[cuprum::tile::module]
mod safe_entry {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn fill(out: *mut f32) {
        let base = pointer_to_tile(out);
    }
}

fn main() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let z = api::zeros::<f32>(&[4]).sync_on(&stream)?;
    let _ = kernels::fill(z.device_pointer(), 4).grid((1, 1, 1)).sync_on(&stream)?;
    Ok(())
}
