// `#[kernel]` means something only inside a `#[cuda_module]`.
use cuprum::simt::kernel;

#[kernel]
pub fn lonely(x: f32) {}

fn main() {}
