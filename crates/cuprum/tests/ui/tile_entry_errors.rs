// #[cuprum::tile::module] and #[cuprum::tile::entry] refuse what they cannot honour, at the
// user's span.

#[cuprum::tile::module]
mod options {
    #[cuprum::tile::entry(fast = true)]
    fn unknown_option() {}

    #[cuprum::tile::entry(use_debug_mlir = "k.mlir")]
    fn unsupported_option() {}

    #[cuprum::tile::entry(print_ir = 1)]
    fn not_a_bool() {}
}

#[cuprum::tile::module(core)]
mod with_arguments {}

#[cuprum::tile::module]
mod outside;

#[cuprum::tile::entry()]
fn entry_outside_a_module() {}

fn main() {
    options::unknown_option();
}
