//! From the tile IR the macro embedded to a loaded kernel and its arguments: the module is
//! decoded once per process ([`EmbeddedModule`]); each specialization of a kernel is
//! specialized, lowered, optimized and made a kernel IR module once per process
//! ([`compiled`]) and loaded once per context ([`loaded`]); [`kernel_args`] turns a launch's
//! arguments into the kernel IR arguments the lowering's launch contract lists.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cuprum_ir::Module;
use cuprum_runtime::{KernelArg, LoadedModule};
use cuprum_tile_ir::{Specialization, TileKernel, TileModule, decode_module, specialize};
use cuprum_tile_lower::{ArgSlot, BlockCount, LowerError, LowerOptions, Lowered, TensorFacts};

use crate::CudaContext;
use crate::tile::error::Error;
use crate::tile::jit_cache;
use crate::tile::launch::CompileOptions;
use crate::tile::launch::bind::ArgDesc;

/// A `#[cuprum::tile::module]`'s tile IR, as the macro embedded it at `cargo build`; decoded
/// (and validated) on first use.
pub struct EmbeddedModule {
    name: &'static str,
    bytes: &'static [u8],
    decoded: OnceLock<Result<TileModule, String>>,
}

impl EmbeddedModule {
    /// The module `name` whose encoded tile IR (`cuprum_tile_ir::encode_module`) is `bytes`.
    pub const fn new(name: &'static str, bytes: &'static [u8]) -> Self {
        Self {
            name,
            bytes,
            decoded: OnceLock::new(),
        }
    }

    /// The decoded module.
    pub(crate) fn module(&self) -> Result<&TileModule, Error> {
        self.decoded
            .get_or_init(|| {
                decode_module(self.bytes).map_err(|e| {
                    format!("the tile IR compiled at cargo build cannot be read ({e}); rebuild the crate")
                })
            })
            .as_ref()
            .map_err(|message| Error::Compile {
                kernel: self.name.to_owned(),
                specialization: String::new(),
                message: message.clone(),
            })
    }
}

/// A lowering of tile kernels to the kernel IR, named for the compile cache. Launches use
/// [`Lowering::DEFAULT`]; tests of the launch path give their own.
#[derive(Clone, Copy)]
pub struct Lowering {
    /// Its name, part of the cache key.
    pub name: &'static str,
    /// The lowering, given what the launch knows of its tensors
    /// ([`LowerOptions::tensor_facts`]).
    pub lower: fn(&TileKernel, &LowerOptions) -> Result<Lowered, LowerError>,
}

impl Lowering {
    /// `cuprum_tile_lower::lower_with`.
    pub const DEFAULT: Lowering = Lowering {
        name: "cuprum-tile-lower",
        lower: cuprum_tile_lower::lower_with,
    };
}

/// One specialization of a kernel, ready to load: the kernel IR module (one kernel) and how
/// to launch it.
pub(crate) struct Compiled {
    /// A number no other compiled kernel of the process has: the key of its loaded modules.
    id: u64,
    /// The specialized tile kernel (every parameter's sizes and types known).
    pub tile: TileKernel,
    /// The kernel IR, optimized.
    pub ir: Arc<Module>,
    /// Threads per block.
    pub block_threads: u32,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
    /// What each kernel IR parameter carries.
    pub args: Vec<ArgSlot>,
    /// How many thread blocks a launch runs.
    pub blocks: BlockCount,
    /// The PTX the GPU loads (`None` on the emulator).
    pub ptx: Option<ModulePtx>,
}

/// Where a compiled tile kernel's PTX came from.
pub(crate) enum ModulePtx {
    /// Written from `ir` for a GPU's target, kept with it by the tile JIT cache.
    Written(cuprum_ptx::Target, String),
    /// Read from [`PTX_OVERRIDE_ENV`]'s folder: loaded as given PTX, so that the compile
    /// cache keeps no cubin it would make from `ir`'s own PTX under this PTX's key.
    Edited(String),
}

/// `B = 128, T = f32`: a specialization, by the kernel's parameter names.
pub(crate) fn spec_text(kernel: &TileKernel, spec: &Specialization) -> String {
    kernel
        .consts
        .iter()
        .zip(&spec.consts)
        .map(|(c, v)| {
            if c.ty == cuprum_ir::ScalarType::Bool {
                format!("{} = {}", c.name, *v != 0)
            } else {
                format!("{} = {v}", c.name)
            }
        })
        .chain(
            kernel
                .types
                .iter()
                .zip(&spec.types)
                .map(|(t, v)| format!("{t} = {v}")),
        )
        .collect::<Vec<_>>()
        .join(", ")
}

/// `, x: 16-byte runs, sizes % [1, 4096]`: the tensor facts of a specialization, by the
/// kernel's parameter names (empty when nothing is known).
pub(crate) fn facts_text(kernel: &TileKernel, facts: &[TensorFacts]) -> String {
    kernel
        .params
        .iter()
        .zip(facts)
        .filter(|(_, f)| f.aligned_runs || f.size_divisors.iter().any(|&d| d > 1))
        .map(|(p, f)| {
            let runs = if f.aligned_runs { " 16-byte runs," } else { "" };
            format!(", {}:{runs} sizes % {:?}", p.name, f.size_divisors)
        })
        .collect()
}

/// A kernel specialized: its tile IR with every generic parameter known, and the tile
/// extents its accesses use ([`cuprum_tile_lower::access_extents`]), from which a launch
/// computes its tensors' facts.
pub(crate) struct Specialized {
    /// The specialized tile kernel.
    pub tile: TileKernel,
    /// Per parameter and axis, the extents its tiles have.
    pub extents: Vec<Vec<u64>>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct SpecKey {
    /// The embedded module's address: one per `#[cuprum::tile::module]`.
    module: usize,
    kernel: usize,
    spec: Specialization,
}

/// Kernel `index` of `module` specialized with `spec`, once per process.
pub(crate) fn specialized(
    module: &'static EmbeddedModule,
    index: usize,
    spec: &Specialization,
) -> Result<Arc<Specialized>, Error> {
    type Cache = Mutex<HashMap<SpecKey, Arc<Specialized>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = SpecKey {
        module: std::ptr::from_ref(module) as usize,
        kernel: index,
        spec: spec.clone(),
    };
    let cache = CACHE.get_or_init(Cache::default);
    if let Some(s) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(s.clone());
    }
    let kernel = kernel_of(module, index)?;
    let tile = specialize(kernel, spec).map_err(|e| Error::Compile {
        kernel: kernel.name.clone(),
        specialization: spec_text(kernel, spec),
        message: e.to_string(),
    })?;
    let extents = cuprum_tile_lower::access_extents(&tile);
    let s = Arc::new(Specialized { tile, extents });
    Ok(cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_insert(s)
        .clone())
}

/// The facts of a launch's tensors (one per parameter; nothing known of scalars) for a
/// kernel whose accesses have `extents`.
pub(crate) fn tensor_facts(extents: &[Vec<u64>], args: &[ArgDesc<'_>]) -> Vec<TensorFacts> {
    extents
        .iter()
        .zip(args)
        .map(|(extents, arg)| match arg {
            ArgDesc::Tensor { tensor, .. } | ArgDesc::Mapped { tensor, .. } => {
                let shape: Vec<u64> = tensor.shape.iter().map(|&n| n as u64).collect();
                let Ok(strides) = tensor
                    .strides
                    .iter()
                    .map(|&s| i64::try_from(s))
                    .collect::<Result<Vec<i64>, _>>()
                else {
                    return TensorFacts::default();
                };
                TensorFacts::of(
                    u64::from(tensor.elem.size_bytes()),
                    tensor.address,
                    tensor.offset as u64,
                    &shape,
                    &strides,
                    extents,
                )
            }
            // Nothing is assumed of a raw pointer's elements (each launch's may differ, and
            // facts are part of the specialization key).
            ArgDesc::Scalar { .. } | ArgDesc::RawPointer { .. } | ArgDesc::Pointer { .. } => {
                TensorFacts::default()
            }
        })
        .collect()
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct CompileKey {
    spec: SpecKey,
    /// What the lowering is given: the tensors' facts and the hints it honours.
    options: LowerOptions,
    lowering: &'static str,
}

/// Kernel `index` of `module` specialized with `spec` and lowered by `lowering` with the
/// tuning `hints` for tensors with `facts` on a device of `compute_capability`, compiled once
/// per process; for a GPU (`gpu`) with its PTX, which the tile JIT cache keeps with the IR.
/// With `print_ir`, the first compile prints the specialized tile IR and the kernel IR on
/// stderr.
#[allow(clippy::too_many_arguments)]
pub(crate) fn compiled(
    module: &'static EmbeddedModule,
    index: usize,
    spec: &Specialization,
    facts: &[TensorFacts],
    hints: CompileOptions,
    compute_capability: (u32, u32),
    gpu: bool,
    lowering: Lowering,
    print_ir: bool,
) -> Result<Arc<Compiled>, Error> {
    type Cache = Mutex<HashMap<CompileKey, Arc<Compiled>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let options = LowerOptions {
        tensor_facts: facts.to_vec(),
        compute_capability: Some(compute_capability),
        ..hints.lower_options()
    };
    let key = CompileKey {
        spec: SpecKey {
            module: std::ptr::from_ref(module) as usize,
            kernel: index,
            spec: spec.clone(),
        },
        options: options.clone(),
        lowering: lowering.name,
    };
    let cache = CACHE.get_or_init(Cache::default);
    if let Some(c) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(c.clone());
    }
    let kernel = kernel_of(module, index)?;
    let fail = |message: String| Error::Compile {
        kernel: kernel.name.clone(),
        specialization: spec_text(kernel, spec),
        message,
    };
    let start = std::time::Instant::now();
    let tile = specialized(module, index, spec)?.tile.clone();
    // Only the default lowering's entries outlive the process: the key names a lowering,
    // and only the default one's code is covered by the compiler fingerprint in the key.
    let (entry, source) = jit_cache::fetch_or_compile(
        module.name,
        module.bytes,
        index,
        spec,
        &options,
        (lowering.name == Lowering::DEFAULT.name).then_some(lowering.name),
        || {
            let lowered = (lowering.lower)(&tile, &options).map_err(|e| fail(e.to_string()))?;
            let mut ir = lowered.kernel;
            cuprum_opt::optimize_kernel(&mut ir);
            let ir = Module { kernels: vec![ir] };
            cuprum_ir::validate_module(&ir).map_err(|e| {
                fail(format!(
                    "the lowered kernel is not valid kernel IR ({e}); this is a bug of the tile lowering"
                ))
            })?;
            // The PTX the load would write (a failure is left for the load to report).
            let (major, minor) = compute_capability;
            let ptx = gpu
                .then(|| cuprum_ptx::Target::for_module(&ir, major, minor).ok())
                .flatten()
                .and_then(|target| {
                    let ptx = cuprum_ptx::write_module(&ir, target).ok()?;
                    Some((target, ptx))
                });
            Ok::<_, Error>(jit_cache::Entry {
                ir,
                block_threads: lowered.block_threads,
                shared_bytes: lowered.shared_bytes,
                args: lowered.args,
                blocks: lowered.blocks,
                ptx,
            })
        },
    )?;
    if cuprum_runtime::cache::stats_enabled() {
        eprintln!(
            "cuprum tile: kernel `{}` ({}{}) {} in {:.3} ms",
            kernel.name,
            spec_text(kernel, spec),
            facts_text(kernel, facts),
            source.describe(),
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    let ir = entry.ir;
    let dump_key = || {
        let hints_text = match (options.num_warps, options.occupancy) {
            (None, None) => String::new(),
            (warps, occupancy) => format!(", warps {warps:?}, occupancy {occupancy:?}"),
        };
        format!(
            "{}/{}/{}{}{hints_text}",
            module.name,
            kernel.name,
            spec_text(kernel, spec),
            facts_text(kernel, facts)
        )
    };
    // CI assembles every kernel the tests build with ptxas: tile kernels too.
    if let Some(dir) = std::env::var_os("CUPRUM_PTX_DUMP") {
        crate::__private::dump_ptx(std::path::Path::new(&dir), &dump_key(), &ir).map_err(fail)?;
    }
    let ptx = match (entry.ptx, std::env::var_os(PTX_OVERRIDE_ENV)) {
        (Some((target, ptx)), Some(dir)) => {
            let stem = crate::__private::ptx_file_stem(&dump_key(), &ir);
            let path = std::path::Path::new(&dir).join(format!("{stem}.{}.ptx", target.name()));
            Some(match overridden_ptx(&path).map_err(fail)? {
                Some(edited) => ModulePtx::Edited(edited),
                None => ModulePtx::Written(target, ptx),
            })
        }
        (ptx, _) => ptx.map(|(target, ptx)| ModulePtx::Written(target, ptx)),
    };
    if print_ir {
        eprintln!(
            "cuprum: tile kernel `{}` ({}{}):\n{}\nlowered ({} threads per block, {} bytes of dynamic shared memory, {}):\n{}",
            kernel.name,
            spec_text(kernel, spec),
            facts_text(kernel, facts),
            cuprum_tile_ir::print_kernel(&tile),
            entry.block_threads,
            entry.shared_bytes,
            entry.blocks,
            cuprum_ir::print_module(&ir)
        );
    }
    static NEXT_ID: AtomicU64 = AtomicU64::new(0);
    let compiled = Arc::new(Compiled {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        tile,
        ir: Arc::new(ir),
        block_threads: entry.block_threads,
        shared_bytes: entry.shared_bytes,
        args: entry.args,
        blocks: entry.blocks,
        ptx,
    });
    // Another thread may have compiled the same kernel meanwhile: everyone uses the first.
    Ok(cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_insert(compiled)
        .clone())
}

/// `CUPRUM_PTX_OVERRIDE=<dir>`: a tile kernel whose PTX file (named as `CUPRUM_PTX_DUMP`
/// names it) is in `<dir>` is loaded from that file instead of the lowering's PTX, on the
/// GPU (the emulator runs the lowered IR as ever). For trying a hand-edited kernel on the
/// GPU (dump, edit, run) before teaching the lowering; the argument contract is the
/// lowering's, so only the code may change.
pub const PTX_OVERRIDE_ENV: &str = "CUPRUM_PTX_OVERRIDE";

/// The PTX at `path` where that file exists, `None` otherwise; either way said on stderr,
/// as an override must never go unnoticed nor silently miss.
fn overridden_ptx(path: &std::path::Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            eprintln!("cuprum: {PTX_OVERRIDE_ENV}: loading {}", path.display());
            Ok(Some(text))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "cuprum: {PTX_OVERRIDE_ENV}: no {}; the lowering's PTX is loaded",
                path.display()
            );
            Ok(None)
        }
        Err(e) => Err(format!(
            "{PTX_OVERRIDE_ENV}: reading {}: {e}",
            path.display()
        )),
    }
}

/// Kernel `index` of `module`.
pub(crate) fn kernel_of(
    module: &'static EmbeddedModule,
    index: usize,
) -> Result<&'static TileKernel, Error> {
    module
        .module()?
        .kernels
        .get(index)
        .ok_or_else(|| Error::Compile {
            kernel: module.name.to_owned(),
            specialization: String::new(),
            message: format!(
                "the module has no kernel number {index}; rebuild the crate (its launchers and its embedded IR disagree)"
            ),
        })
}

/// The loaded modules of each context, by compiled kernel ([`Compiled::id`]). A context
/// stays open while the process uses tile kernels on it.
type LoadedCache = Mutex<Vec<(CudaContext, HashMap<u64, Arc<LoadedModule>>)>>;

/// `compiled` loaded on `ctx`, once per context.
pub(crate) fn loaded(
    ctx: &CudaContext,
    compiled: &Arc<Compiled>,
) -> Result<Arc<LoadedModule>, Error> {
    static LOADED: OnceLock<LoadedCache> = OnceLock::new();
    let key = compiled.id;
    let mut loaded = LOADED
        .get_or_init(LoadedCache::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let position = match loaded.iter().position(|(c, _)| c.same_context(ctx)) {
        Some(p) => p,
        None => {
            loaded.push((ctx.clone(), HashMap::new()));
            loaded.len() - 1
        }
    };
    let modules = &mut loaded[position].1;
    if let Some(m) = modules.get(&key) {
        return Ok(m.clone());
    }
    let module = Arc::new(match &compiled.ptx {
        Some(ModulePtx::Edited(ptx)) => {
            LoadedModule::load_with_ptx(ctx, compiled.ir.clone(), ptx.clone())?
        }
        Some(ModulePtx::Written(target, ptx)) => {
            LoadedModule::load_written(ctx, compiled.ir.clone(), *target, ptx.clone())?
        }
        None => LoadedModule::load(ctx, compiled.ir.clone())?,
    });
    modules.insert(key, module.clone());
    Ok(module)
}

/// The kernel IR arguments of a launch of `compiled` with `args` (one per tile kernel
/// parameter), in the order of the lowering's launch contract.
pub(crate) fn kernel_args(
    compiled: &Compiled,
    args: &[ArgDesc<'_>],
) -> Result<Vec<KernelArg>, Error> {
    let name = &compiled.tile.name;
    let broken = |what: String| Error::Compile {
        kernel: compiled.tile.name.clone(),
        specialization: String::new(),
        message: format!(
            "the lowering's launch contract {what}; this is a bug of the tile lowering"
        ),
    };
    let i64_arg = |v: usize, what: &str| {
        i64::try_from(v)
            .map(KernelArg::scalar)
            .map_err(|_| broken(format!("asks for {what} {v}, beyond i64")))
    };
    compiled
        .args
        .iter()
        .map(|slot| {
            let param = slot.param() as usize;
            let arg = args
                .get(param)
                .ok_or_else(|| broken(format!("names parameter {param}, which does not exist")))?;
            let tensor = |axis: Option<u32>| match arg {
                ArgDesc::Tensor { tensor, .. }
                | ArgDesc::Pointer { tensor }
                | ArgDesc::Mapped { tensor, .. } => match axis {
                    Some(a) if a as usize >= tensor.shape.len() => Err(broken(format!(
                        "names axis {a} of parameter {param}, of rank {}",
                        tensor.shape.len()
                    ))),
                    _ => Ok(tensor),
                },
                ArgDesc::Scalar { .. } | ArgDesc::RawPointer { .. } => Err(broken(format!(
                    "takes parameter {param} as a tensor, but it is {}",
                    arg.kind()
                ))),
            };
            match *slot {
                ArgSlot::TensorData { .. } => {
                    let t = tensor(None)?;
                    Ok(KernelArg::Slice {
                        address: t.address,
                        len: t.alloc_len as u64,
                    })
                }
                ArgSlot::TensorOffset { .. } => i64_arg(tensor(None)?.offset, "an offset"),
                ArgSlot::TensorDim { axis, .. } => {
                    i64_arg(tensor(Some(axis))?.shape[axis as usize], "a size")
                }
                ArgSlot::TensorStride { axis, .. } => {
                    i64_arg(tensor(Some(axis))?.strides[axis as usize], "a stride")
                }
                ArgSlot::Scalar { .. } => match arg {
                    ArgDesc::Scalar { ty, bits } => Ok(KernelArg::Scalar {
                        ty: *ty,
                        bits: *bits,
                    }),
                    _ => Err(broken(format!(
                        "takes parameter {param} as a scalar, but it is {}",
                        arg.kind()
                    ))),
                },
                ArgSlot::TensorMap {
                    box_dims, swizzle, ..
                } => tensor_map_arg(name, tensor(None)?, box_dims, swizzle),
            }
        })
        .collect()
}

/// The tensor map that [`ArgSlot::TensorMap`] asks for (`cuprum_tile_lower::slot_tensor_map`),
/// from the tensor's first element; checked by `cuprum_ir::TensorMapDesc::check` against
/// the allocation and encoded for the tensor's context's backend.
fn tensor_map_arg(
    kernel: &str,
    tensor: &crate::tile::launch::bind::TensorDesc<'_>,
    box_dims: [u32; 2],
    swizzle: cuprum_ir::Swizzle,
) -> Result<KernelArg, Error> {
    let fail = |message: String| Error::Compile {
        kernel: kernel.to_owned(),
        specialization: String::new(),
        message,
    };
    let size = u64::from(tensor.elem.size_bytes());
    let start = (tensor.offset as u64).saturating_mul(size);
    let shape: Vec<u64> = tensor.shape.iter().map(|&n| n as u64).collect();
    let strides: Vec<u64> = tensor.strides.iter().map(|&s| s as u64).collect();
    let desc = cuprum_tile_lower::slot_tensor_map(
        tensor.elem,
        tensor.address.saturating_add(start),
        &shape,
        &strides,
        box_dims,
        swizzle,
    )
    .ok_or_else(|| {
        fail(format!(
            "a tensor map of a rank-{} tensor (the lowering asks for rank 2 to 5; this is a bug \
             of the tile lowering)",
            tensor.shape.len()
        ))
    })?;
    let have = (tensor.alloc_len as u64)
        .saturating_mul(size)
        .saturating_sub(start);
    let map = cuprum_runtime::tensor_map::encode(tensor.ctx.backend(), &desc, Some(have))
        .map_err(|e| fail(format!("the tensor map of a tile kernel's tensor: {e}")))?;
    Ok(KernelArg::TensorMap {
        map,
        address: desc.address,
        bytes: u64::try_from(desc.store_extent_bytes()).unwrap_or(u64::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::overridden_ptx;

    #[test]
    fn an_override_file_is_read_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("attention-0123456789abcdef.sm_90a.ptx");
        assert_eq!(overridden_ptx(&path), Ok(None));
        std::fs::write(&path, "// edited by hand").expect("writing the override");
        assert_eq!(
            overridden_ptx(&path),
            Ok(Some(String::from("// edited by hand")))
        );
        // A path that cannot be read as a file is an error that names it, not a silent miss.
        let unreadable = dir.path().to_path_buf();
        let err = overridden_ptx(&unreadable).expect_err("a folder is no PTX file");
        assert!(err.contains(&unreadable.display().to_string()), "{err}");
    }
}
