//! `cargo cuprum emit` for tile kernels: a `#[cuprum::tile::module]`'s tile IR, and for a
//! specialized kernel the kernel IR it is lowered to and its PTX, through the same crates a
//! launch goes through (`cuprum_tile_front`, `cuprum_tile_ir::specialize`,
//! `cuprum_tile_lower::lower`, `cuprum_opt`, `cuprum_ptx`).
//!
//! A tile kernel generic over its tile sizes or element types has a tile IR (printed with
//! its parameters symbolic) but no kernel IR until it is specialized: name the values with
//! `--kernel 'add::<128>'` (in source order; an array parameter `const S: [i32; N]` takes `N`
//! values) or `--specialize B=128` (by the tile IR's parameter names: `S[0]=2,S[1]=4,T=f32`).

use std::fmt::Write as _;
use std::path::Path;

use cuprum_ir::ScalarType;
use cuprum_tile_front::{EntryInfo, GenericParamInfo};
use cuprum_tile_ir::{Specialization, TileKernel};

use crate::emit::{EmitOptions, EmitOutput, FoundModule, located, print_unit};
use crate::specialize::SpecArgs;

/// Compiles a tile module and appends what `options` asks for to `out`.
pub fn emit_tile_module(
    found: &FoundModule,
    shown: &Path,
    options: &EmitOptions,
    out: &mut EmitOutput,
) {
    let compiled = match cuprum_tile_front::compile_module_with_info(&found.item) {
        Ok(c) => c,
        Err(e) => {
            out.errors.push(located(shown, &e));
            return;
        }
    };
    for (kernel, entry) in compiled.module.kernels.iter().zip(&compiled.entries) {
        out.all_kernels.push(kernel.name.clone());
        if options
            .kernel
            .as_ref()
            .is_some_and(|want| *want != kernel.name)
        {
            continue;
        }
        if options.kernel.is_some() {
            out.found_requested = true;
        }
        let at = format!("{}:{}", shown.display(), found.line);
        let generic = !kernel.is_specialized();
        if options.ir {
            let _ = writeln!(
                out.text,
                "// ===== {at}: mod {} (tile kernel: {}) =====\n// ----- tile IR -----",
                found.name, kernel.name
            );
            out.text.push_str(&cuprum_tile_ir::print_kernel(kernel));
            out.text.push('\n');
        }
        let spec = match (&options.spec, generic) {
            (None, false) => Specialization {
                consts: Vec::new(),
                types: Vec::new(),
            },
            (None, true) => {
                out.notes.push(format!(
                    "{at}: tile kernel `{}` is generic over {}: its kernel IR and PTX exist \
                     per specialization; name one with --kernel '{}::<{}>'",
                    kernel.name,
                    describe(entry),
                    kernel.name,
                    example_values(entry)
                ));
                continue;
            }
            (Some(args), _) => match resolve(kernel, entry, args) {
                Ok(s) => s,
                Err(e) => {
                    out.errors
                        .push(format!("{at}: tile kernel `{}`: {e}", kernel.name));
                    continue;
                }
            },
        };
        let lowered = cuprum_tile_ir::specialize(kernel, &spec)
            .map_err(|e| e.to_string())
            .and_then(|k| {
                // sm_90a code is what a launch on compute capability 9.0 runs: the lowering
                // takes Hopper's instructions there.
                let lower_options = cuprum_tile_lower::LowerOptions {
                    compute_capability: options.target.is_arch_specific().then_some((9, 0)),
                    ..cuprum_tile_lower::LowerOptions::default()
                };
                cuprum_tile_lower::lower_with(&k, &lower_options).map_err(|e| e.to_string())
            });
        let mut lowered = match lowered {
            Ok(l) => l,
            Err(e) => {
                out.errors.push(format!("{at}: {e}"));
                continue;
            }
        };
        if options.optimize {
            cuprum_opt::optimize_kernel(&mut lowered.kernel);
        }
        let label = format!(
            "tile kernel {} lowered: {} threads per block, {} bytes of dynamic shared memory",
            kernel.name, lowered.block_threads, lowered.shared_bytes
        );
        let unit = cuprum_ir::Module {
            kernels: vec![lowered.kernel],
        };
        print_unit(found, shown, options, &unit, &label, out);
    }
}

/// The entry's generic parameters, for messages: `const B: i32, T`.
fn describe(entry: &EntryInfo) -> String {
    entry
        .generics
        .iter()
        .map(|g| match g {
            GenericParamInfo::Const {
                name,
                ty,
                len,
                array,
                ..
            } => {
                if *array {
                    format!("const {name}: [{ty}; {len}]")
                } else {
                    format!("const {name}: {ty}")
                }
            }
            GenericParamInfo::Type { name, .. } => name.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Example values for every generic parameter, in source order.
fn example_values(entry: &EntryInfo) -> String {
    entry
        .generics
        .iter()
        .flat_map(|g| match g {
            GenericParamInfo::Const { len, .. } => vec!["64"; *len as usize],
            GenericParamInfo::Type { .. } => vec!["f32"],
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn const_value(text: &str) -> Result<i64, String> {
    match text.trim() {
        "true" => Ok(1),
        "false" => Ok(0),
        t => t
            .parse::<i64>()
            .map_err(|_| format!("`{t}` is not an integer or bool value")),
    }
}

fn type_value(text: &str) -> Result<ScalarType, String> {
    ScalarType::from_rust_name(text.trim()).ok_or_else(|| {
        format!(
            "`{}` is not an element type (f32, bf16, i32, ...)",
            text.trim()
        )
    })
}

/// The specialization `args` names for `kernel` (see the module docs).
fn resolve(
    kernel: &TileKernel,
    entry: &EntryInfo,
    args: &SpecArgs,
) -> Result<Specialization, String> {
    let mut consts: Vec<Option<i64>> = vec![None; kernel.consts.len()];
    let mut types: Vec<Option<ScalarType>> = vec![None; kernel.types.len()];
    match args {
        SpecArgs::Positional(values) => {
            let mut values = values.iter();
            for g in &entry.generics {
                match g {
                    GenericParamInfo::Const { first, len, .. } => {
                        for i in *first..*first + *len {
                            let v = values.next().ok_or("too few generic arguments")?;
                            consts[i as usize] = Some(const_value(v)?);
                        }
                    }
                    GenericParamInfo::Type { index, .. } => {
                        let v = values.next().ok_or("too few generic arguments")?;
                        types[*index as usize] = Some(type_value(v)?);
                    }
                }
            }
            if values.next().is_some() {
                return Err(format!(
                    "too many generic arguments: it takes {}",
                    describe(entry)
                ));
            }
        }
        SpecArgs::Named(pairs) => {
            for (name, value) in pairs {
                if let Some(i) = kernel.consts.iter().position(|c| &c.name == name) {
                    consts[i] = Some(const_value(value)?);
                } else if let Some(i) = kernel.types.iter().position(|t| t == name) {
                    types[i] = Some(type_value(value)?);
                } else {
                    return Err(format!(
                        "it has no generic parameter `{name}` (it takes {})",
                        describe(entry)
                    ));
                }
            }
        }
    }
    let missing: Vec<String> = kernel
        .consts
        .iter()
        .zip(&consts)
        .filter(|(_, v)| v.is_none())
        .map(|(c, _)| c.name.clone())
        .chain(
            kernel
                .types
                .iter()
                .zip(&types)
                .filter(|(_, v)| v.is_none())
                .map(|(t, _)| t.clone()),
        )
        .collect();
    if !missing.is_empty() {
        return Err(format!("no value for {}", missing.join(", ")));
    }
    Ok(Specialization {
        consts: consts.into_iter().flatten().collect(),
        types: types.into_iter().flatten().collect(),
    })
}

#[cfg(test)]
mod tests {
    use crate::emit::{EmitOptions, emit_path};
    use crate::specialize::SpecArgs;

    const SOURCE: &str = r#"
#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn add<const B: i32>(z: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>) {
        z.store(load_tile_like(x, z) + 1.0f32);
    }

    #[cuprum::tile::entry()]
    fn fill(z: &mut Tensor<f32, { [64] }>) {
        z.store(constant(2.0f32, z.shape()));
    }
}
"#;

    /// Attention's two chained products, without the softmax.
    const CHAIN_SOURCE: &str = r#"
#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn chain<const BM: i32, const BN: i32, const D: i32>(
        out: &mut Tensor<f32, { [BM, D] }>,
        q: &Tensor<f16, { [-1, D] }>,
        k: &Tensor<f16, { [-1, D] }>,
        v: &Tensor<f16, { [-1, D] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let tq: Tile<f16, { [BM, D] }> = q.partition(const_shape![BM, D]).load([pid.0, 0i32]);
        let k_part = k.partition(const_shape![BN, D]);
        let v_part = v.partition(const_shape![BN, D]);
        let mut acc: Tile<f32, { [BM, D] }> = constant(0.0f32, const_shape![BM, D]);
        let n: i32 = k.shape()[0];
        for j in 0i32..ceil_div(n, BN) {
            let kt: Tile<f16, { [BN, D] }> = k_part.load([j, 0i32]);
            let zero: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
            let s: Tile<f32, { [BM, BN] }> = mma(tq, kt.transpose(), zero);
            let p: Tile<f16, { [BM, BN] }> = convert_tile(s);
            let vt: Tile<f16, { [BN, D] }> = v_part.load([j, 0i32]);
            acc = mma(p, vt, acc);
        }
        out.store(acc);
    }
}
"#;

    fn emit(kernel: Option<&str>, spec: Option<SpecArgs>) -> crate::emit::EmitOutput {
        emit_for(SOURCE, kernel, spec, cuprum_ptx::Target::Sm90)
    }

    fn emit_for(
        source: &str,
        kernel: Option<&str>,
        spec: Option<SpecArgs>,
        target: cuprum_ptx::Target,
    ) -> crate::emit::EmitOutput {
        let dir = std::env::temp_dir().join(format!(
            "cuprum-emit-tile-{}-{}-{}",
            std::process::id(),
            kernel.unwrap_or("all"),
            target.name()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let file = dir.join("k.rs");
        std::fs::write(&file, source).expect("the source written");
        let options = EmitOptions {
            kernel: kernel.map(str::to_owned),
            spec,
            optimize: true,
            ir: true,
            ptx: true,
            target,
        };
        let out = emit_path(&file, &dir, &options);
        let _ = std::fs::remove_dir_all(&dir);
        out
    }

    #[test]
    fn tile_ir_for_every_kernel_and_kernel_ir_and_ptx_for_specialized_ones() {
        let out = emit(None, None);
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert!(
            out.text.contains("tile kernel add<$0 = const B: i32>"),
            "{}",
            out.text
        );
        assert!(out.text.contains("tile kernel fill"), "{}", out.text);
        // `fill` is not generic: lowered and written as PTX.
        assert!(out.text.contains(".entry fill"), "{}", out.text);
        assert!(!out.text.contains(".entry add"), "{}", out.text);
        assert!(
            out.notes.iter().any(|n| n.contains("add::<64>")),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn sm_90a_lowers_tile_kernels_for_hopper() {
        // The same kernel: warpgroup MMAs for sm_90a (what a launch on an H100 or H200
        // runs), `mma.sync` for sm_90.
        let emit = |target| {
            let sizes = ["64", "64", "128"].map(String::from).to_vec();
            let out = emit_for(
                CHAIN_SOURCE,
                Some("chain"),
                Some(SpecArgs::Positional(sizes)),
                target,
            );
            assert!(out.errors.is_empty(), "{:?}", out.errors);
            out.text
        };
        let hopper = emit(cuprum_ptx::Target::Sm90a);
        assert!(hopper.contains(".target sm_90a"), "{hopper}");
        assert!(hopper.contains("wgmma.mma_async"), "{hopper}");
        let portable = emit(cuprum_ptx::Target::Sm90);
        assert!(portable.contains("mma.sync"), "{portable}");
        assert!(!portable.contains("wgmma"), "{portable}");
    }

    #[test]
    fn a_specialization_gives_the_lowered_kernel_and_bad_ones_are_errors() {
        let out = emit(Some("add"), Some(SpecArgs::Positional(vec!["128".into()])));
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert!(out.text.contains("tile<f32, [$0]>"), "{}", out.text);
        assert!(out.text.contains(".entry add"), "{}", out.text);
        let named = emit(
            Some("add"),
            Some(SpecArgs::Named(vec![("B".into(), "128".into())])),
        );
        assert_eq!(named.text, out.text);
        let bad = emit(
            Some("add"),
            Some(SpecArgs::Named(vec![("C".into(), "1".into())])),
        );
        assert!(
            bad.errors
                .iter()
                .any(|e| e.contains("no generic parameter `C`")),
            "{:?}",
            bad.errors
        );
        let zero = emit(Some("add"), Some(SpecArgs::Positional(vec!["0".into()])));
        assert!(
            zero.errors.iter().any(|e| e.contains("between 1 and")),
            "{:?}",
            zero.errors
        );
    }
}
