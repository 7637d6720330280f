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

    #[cuprum::tile::entry(optimization_hints = (sm_90 = (occupancy = 0)))]
    fn occupancy_out_of_range() {}

    #[cuprum::tile::entry(optimization_hints = (sm_90 = (num_worker_warps_per_cta = 6)))]
    fn warps_not_a_power_of_two() {}

    #[cuprum::tile::entry(optimization_hints = (default = (latency = 4)))]
    fn per_op_hint_on_an_entry() {}
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
