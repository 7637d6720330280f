//! Which sizes an example runs at, shared by the examples that benchmark.

/// Whether to run the benchmark sizes: on a GPU (`on_gpu`), unless `CUPRUM_EXAMPLE_SIZE=small`
/// asks for the small sizes the emulator runs (compute-sanitizer's `scripts/sanitize.sh`
/// does, since its tools slow kernels down a thousandfold and more).
pub fn benchmark_sizes(on_gpu: bool) -> bool {
    on_gpu && std::env::var("CUPRUM_EXAMPLE_SIZE").map_or(true, |s| s != "small")
}
