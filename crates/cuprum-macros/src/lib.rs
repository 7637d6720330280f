//! cuprum's proc macros.
//!
//! `#[cuda_module]` is the SIMT front door: it runs the front end on the module at
//! `cargo build` (so unsupported Rust is a compile error at the user's span), re-emits the
//! kernel bodies as ordinary host functions (so rustc type-checks them and its messages point
//! at the user's code), embeds the module's source for the run-time compile, and generates the
//! typed host API: `load`, `prepare_<kernel>` and one launch method per kernel.
//! `#[kernel]`, `#[launch_bounds]` and `#[launch_contract]` only mark items for it.
//!
//! `#[cuprum::tile::module]` ([`tile_module`]) is the tile track's: it runs the tile front end
//! on the module at `cargo build`, embeds the tile IR and generates one lazy launcher per
//! `#[cuprum::tile::entry]` ([`tile_entry`]).

#![warn(missing_docs)]

use proc_macro::TokenStream;

mod device_copy;
mod host;
mod host_consts;
mod layout_check;
mod outer_consts;
mod raw_launch;
mod requires;
mod tile;
mod tile_hints;

/// Compiles every `#[kernel]` in an inline module to device code and generates its host API.
/// See the `cuprum` crate's documentation for the full shape.
#[proc_macro_attribute]
pub fn cuda_module(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(
            proc_macro2::Span::call_site(),
            "#[cuda_module] takes no arguments",
        )
        .to_compile_error()
        .into();
    }
    let module = syn::parse_macro_input!(item as syn::ItemMod);
    let file = proc_macro::Span::call_site().local_file();
    let with_parent = outer_consts::with_parent_consts(&module, file.as_deref());
    match host::expand(&module, &with_parent) {
        Ok(tokens) => tokens.into(),
        Err(e) => {
            // Keep the module (with its kernels as host code) so rustc still type-checks it
            // and the user sees our error first, not a cascade of unresolved names.
            let mut out = e.to_compile_error();
            out.extend(host::host_copy_only(&module));
            out.into()
        }
    }
}

/// The argument `#[cuda_module]` gives the marker attributes it leaves on the host copies of
/// the kernels: they then expand to the item unchanged, and the user's imports of them count
/// as used.
const HOST_COPY_MARK: &str = "__cuprum_host_copy";

fn marker(what: &str, attr: TokenStream, item: TokenStream) -> TokenStream {
    if attr.to_string() == HOST_COPY_MARK {
        return item;
    }
    let mut out: TokenStream = syn::Error::new(
        proc_macro2::Span::call_site(),
        format!("#[{what}] only has a meaning on a function inside a #[cuda_module] module"),
    )
    .to_compile_error()
    .into();
    out.extend(item);
    out
}

/// Marks a device kernel inside a `#[cuda_module]`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    marker("kernel", attr, item)
}

/// `#[device]` on a helper function written beside a `#[cuda_module]` (in its parent module,
/// as cuda-oxide's examples write them): the module's kernels may call it, and the compiler
/// takes it into the module. On the host it is an ordinary function.
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(
            proc_macro2::Span::call_site(),
            "`#[device]` takes no arguments",
        )
        .to_compile_error()
        .into();
    }
    item
}

/// `#[constant]` on a `static NAME: ConstantMemory<T> = ConstantMemory::UNINIT;` inside a
/// `#[cuda_module]`: constant memory that kernels read with `NAME.get()` or `NAME.get_ref()`
/// and the host sets with the loaded module's `set_name` (see `cuprum::simt::constant`).
#[proc_macro_attribute]
pub fn constant(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(
            proc_macro2::Span::call_site(),
            "`#[constant]` takes no arguments",
        )
        .to_compile_error()
        .into();
    }
    item
}

/// `#[launch_bounds(max_threads[, min_blocks_per_sm])]` on a kernel inside a `#[cuda_module]`.
#[proc_macro_attribute]
pub fn launch_bounds(attr: TokenStream, item: TokenStream) -> TokenStream {
    marker("launch_bounds", attr, item)
}

/// `#[max_registers(N)]` on a kernel inside a `#[cuda_module]`: ptxas gives it at most `N`
/// registers per thread (PTX's `.maxnreg`; `N` a multiple of 8 from 24 to 256), the cap that
/// `setmaxnreg` redistributes between warpgroups.
#[proc_macro_attribute]
pub fn max_registers(attr: TokenStream, item: TokenStream) -> TokenStream {
    marker("max_registers", attr, item)
}

/// `#[cluster_launch(x, y, z)]` (or `(x)`, `(x, y)`) on a kernel inside a `#[cuda_module]`:
/// every launch runs its blocks in thread-block clusters of that shape (PTX's
/// `.reqnctapercluster`; compute capability 9.0, at most 8 blocks per cluster), so a plain
/// launch of it runs clusters, and its grid must be whole clusters. See
/// `cuprum::simt::cluster`.
#[proc_macro_attribute]
pub fn cluster_launch(attr: TokenStream, item: TokenStream) -> TokenStream {
    marker("cluster_launch", attr, item)
}

/// `#[launch_contract(domain = N, block = (x, y, z))]` on a kernel inside a `#[cuda_module]`,
/// with the optional keys `dynamic_shared = bytes`, `coordinates = u32` and
/// `requires = (relations between the arguments)`. On an `unsafe` kernel the block alone,
/// `#[launch_contract(block = (x, y, z))]`, makes its raw launch refuse any other block (and
/// the compiler relies on the shape: thread indices below it, so shared-memory checks they
/// prove are dropped); a whole contract there gives `prepare_*` and an `unsafe` launch taking
/// what it prepared.
#[proc_macro_attribute]
pub fn launch_contract(attr: TokenStream, item: TokenStream) -> TokenStream {
    marker("launch_contract", attr, item)
}

/// `#[cuprum::tile::module]`: compiles the `#[cuprum::tile::entry]` functions of an inline
/// module with the tile front end and generates their launchers. See `cuprum::tile`.
#[proc_macro_attribute]
pub fn tile_module(attr: TokenStream, item: TokenStream) -> TokenStream {
    let module = syn::parse_macro_input!(item as syn::ItemMod);
    tile::expand_module(attr.into(), &module).into()
}

/// `#[cuprum::tile::entry(..)]` marks a tile kernel inside a `#[cuprum::tile::module]`,
/// which reads it (options: `print_ir = true` prints the kernel's tile IR and kernel IR when
/// a specialization is first compiled; `optimization_hints = (sm_90 = (occupancy = 4,
/// num_worker_warps_per_cta = 16), default = (..))` are cuTile Rust's tuning hints per target,
/// checked here and honoured as `cuprum::tile::tile_kernel::CompileOptions` says; cuTile
/// Rust's `unchecked_accesses`, `deny_in_kernel_checks` and `dump_mlir_dir` are accepted and
/// change nothing).
#[proc_macro_attribute]
pub fn tile_entry(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut out: TokenStream = tile::entry_outside_module().into();
    out.extend(item);
    out
}

/// `#[derive(DeviceCopy)]` on a `#[repr(C)]` struct whose fields are all `DeviceCopy`
/// (numbers, `bool`, arrays of them, other such structs) and that has no padding: implements
/// `cuprum::DeviceCopy`, so `DeviceBuffer`s of it can be made and passed to kernels as
/// `&[T]` and `DisjointSlice<T>`. Anything else is refused at `cargo build`.
#[proc_macro_derive(DeviceCopy)]
pub fn derive_device_copy(item: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(item as syn::DeriveInput);
    match device_copy::expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `launch!(function<<<grid, block, shared_bytes, stream>>>(arguments..))`: a raw launch of a
/// `cuprum::Function` in CUDA C++'s syntax (`grid` and `block` a `u32` or a tuple of two or
/// three, `stream` a `Stream` or `&Stream`, each argument a number, a buffer (passed as its
/// address) or a `RawArg`). It is an `unsafe` call returning `cuprum::Result<()>`:
/// `unsafe { launch!(f<<<blocks, 256, 0, stream>>>(&a, &b, n))? }`. See
/// `cuprum::external::Function::launch` for what is checked and what the caller promises.
#[proc_macro]
pub fn launch(input: TokenStream) -> TokenStream {
    match raw_launch::expand(input.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}
