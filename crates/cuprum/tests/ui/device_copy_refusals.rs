// `#[derive(DeviceCopy)]` implements the unsafe trait only for plain data laid out as the
// device lays it out; each refusal says what to write instead.
use cuprum::DeviceCopy;

// No `#[repr(C)]`: rustc may reorder the fields.
#[derive(Clone, Copy, DeviceCopy)]
struct NoRepr {
    a: f32,
    b: u32,
}

// Padding between `a` and `b` would be uninitialized bytes.
#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
struct Padded {
    a: u8,
    b: f32,
}

// A reference points into host memory.
#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
struct HasRef {
    r: &'static f32,
}

// A raw pointer means nothing on the device.
#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
struct HasPtr {
    p: *const f32,
}

// A field that is not DeviceCopy itself.
#[derive(Clone, Copy)]
struct Plain {
    x: f32,
}

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
struct Outer {
    inner: Plain,
}

// Enums: not every bit pattern is a variant.
#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
enum Kind {
    A,
    B,
}

fn main() {}
