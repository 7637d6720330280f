//! The fuzzer on whatever device `CudaContext::new(0)` gives: the runtime's emulator in CI,
//! the GPU where `gpu-pack` runs the test binaries with `CUPRUM_DEVICE=cuda`. A short
//! campaign (the full one is the `gpu_fuzz` example), and a probe of float atomics on
//! subnormal values, which the generator keeps away from (see below).

use cuprum_fuzz::program::{Node, Param, Place, Program, Role, Source, Stmt};
use cuprum_fuzz::*;
use cuprum_ir::{AtomicOp, ScalarType, Scope};
use cuprum_runtime::{BackendKind, CudaContext};

fn device() -> Option<CudaContext> {
    match CudaContext::new(0) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            eprintln!("note: no device ({e}); skipped");
            None
        }
    }
}

#[test]
fn random_kernels_on_the_device_match_the_host_reference() {
    let Some(ctx) = device() else {
        return;
    };
    let on_gpu = ctx.backend() == BackendKind::Cuda;
    let opts = campaign::Options {
        // On a GPU a few modules (the example runs 10,000 kernels); on the emulator a token
        // run, as the host tests cover the rest.
        count: if on_gpu { 300 } else { 24 },
        seed: 1_000_000,
        per_module: if on_gpu { 150 } else { 12 },
        both: true,
        jit_threads: 4,
        cfg: if on_gpu { Config::gpu() } else { Config::ci() },
        ..campaign::Options::default()
    };
    let summary = campaign::run(&ctx, &opts, &mut |l| eprintln!("{l}"));
    eprintln!("{}", summary.line());
    assert!(
        summary.mismatches.is_empty(),
        "{} mismatches; the first:\n{}",
        summary.mismatches.len(),
        summary.mismatches[0].text
    );
}

/// `old = atomic add slot[gid] += x[gid]` on `ty`, with the old value stored to an output.
fn atomic_add_program(ty: ScalarType, threads: u32) -> Program {
    let u32_ = ScalarType::U32;
    Program {
        name: format!("atomic_add_{ty}"),
        block: threads,
        grid: 1,
        params: vec![
            Param::Buffer {
                elem: ty,
                role: Role::Input { len: threads },
            },
            Param::Buffer {
                elem: ty,
                role: Role::Private,
            },
            Param::Buffer {
                elem: ty,
                role: Role::Output { per_thread: 1 },
            },
        ],
        shared: Vec::new(),
        locals: Vec::new(),
        vars: Vec::new(),
        types: vec![u32_, ty, ty],
        body: vec![
            Stmt::Def(0, Node::Source(Source::GlobalId)),
            Stmt::Def(1, Node::Load(Place::Buffer { param: 0, index: 0 })),
            Stmt::Def(
                2,
                Node::Atomic {
                    place: Place::Buffer { param: 1, index: 0 },
                    op: AtomicOp::Add,
                    scope: Scope::Device,
                    value: 1,
                    compare: None,
                },
            ),
            Stmt::Store {
                place: Place::Buffer { param: 2, index: 0 },
                value: 2,
            },
        ],
        declare_block: false,
    }
}

fn le_bytes(values: &[u64], ty: ScalarType) -> Vec<u8> {
    let size = ty.size_bytes() as usize;
    values
        .iter()
        .flat_map(|v| v.to_le_bytes()[..size].to_vec())
        .collect()
}

/// Float atomic adds at subnormal values, where the IR's rule is specific: `f32` adds flush
/// subnormal operands and results to signed zeros (as `atom.add.f32` does, first measured by
/// this probe on an H200), `f64` adds keep them. Subnormal slots plus subnormal, tiny normal
/// and zero operands, every result compared with the host reference bit for bit, on the
/// emulator and on the device; a failure on a GPU means the PTX writer's float atomic add is
/// not what the IR specifies.
#[test]
fn float_atomic_adds_treat_subnormals_as_the_ir_says() {
    let Some(ctx) = device() else {
        return;
    };
    let threads = 32;
    for (ty, slots, operands) in [
        (
            ScalarType::F32,
            // Subnormal slots (the smallest, a middling one, the largest, negative ones).
            [1u64, 0x0040_0000, 0x007f_ffff, 0x8000_0001],
            // Subnormal, smallest normal, a normal whose sum with the slot is subnormal, zero.
            [1u64, 0x0080_0000, 0x8080_0000, 0],
        ),
        (
            ScalarType::F64,
            [1u64, 1 << 51, (1 << 52) - 1, 1 << 63 | 1],
            [1u64, 1 << 52, 1 << 63 | 1 << 52, 0],
        ),
    ] {
        let program = atomic_add_program(ty, threads);
        let spread = |v: [u64; 4]| (0..threads).map(|i| v[i as usize % 4]).collect::<Vec<_>>();
        let slot_values = spread(slots);
        let mut ops = spread(operands);
        ops.rotate_left(1);
        let inputs = Inputs {
            scalars: vec![0; 3],
            buffers: vec![
                le_bytes(&ops, ty),
                le_bytes(&slot_values, ty),
                vec![0x5a; (threads * ty.size_bytes()) as usize],
            ],
        };
        let expected = reference::run(&program, &inputs);
        let kernel = match lower::lower(&program) {
            Ok(k) => k,
            Err(e) => panic!("{e}"),
        };
        let emulated = emulate(&kernel, &program, &inputs);
        assert_eq!(
            compare(&program, &expected, &emulated),
            Ok(()),
            "{ty} on the emulator"
        );
        let got = match device::run_batch(&ctx, vec![kernel.clone()], &[(&program, &inputs)]) {
            Ok(mut o) => o.remove(0),
            Err(e) => panic!("{ty}: the device failed: {e}"),
        };
        if let Err(m) = compare(&program, &expected, &got) {
            panic!(
                "{ty} atomic add on the device does not treat subnormals as the IR says \
                 (f32 flushed, f64 kept): {m}\n(parameter 1 holds the slots, 2 the old values; inputs \
                 in parameter 0)\n{}",
                cuprum_ir::print_kernel(&kernel)
            );
        }
    }
}
