//! Line information for tile kernels: asked for (`compile_module_with_lines`, what the macro
//! does under `CUPRUM_LINEINFO`), every statement of an entry is marked with its line and
//! column, the markers survive specialization, and the lowering turns them into the kernel
//! IR's `SourceLine`s, so the PTX has one `.file` and `.loc`s at the Rust lines, which ptxas
//! assembles. Without the request there are no markers; with it, the PTX is the same but for
//! the `.file`/`.loc` directives (the general lowering, `wgmma` on Hopper, and the Hopper GEMM
//! recipe, whose pattern match must look past the markers).

mod common;

use common::{kernel, specialized};
use cuprum_ptx::Target;
use cuprum_tile_ir::{Block, Stmt, TileModule, validate_module};
use cuprum_tile_lower::{LowerOptions, TensorFacts, lower_with};

const FILE: &str = "/work/src/tile_kernels.rs";

const SOURCE: &str = r#"mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn softmax<const BM: i32, const BN: i32>(
        y: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
    ) {
        let tile_x: Tile<f32, { [BM, BN] }> = load_tile_like(x, y);
        let tile_x_max: Tile<f32, { [BM] }> = reduce_max(tile_x, 1i32);
        let tile_x_max: Tile<f32, { [BM, BN] }> =
            tile_x_max.reshape(const_shape![BM, 1]).broadcast(y.shape());
        let num: Tile<f32, { [BM, BN] }> = exp(tile_x - tile_x_max);
        let denom: Tile<f32, { [BM] }> = reduce_sum(num, 1);
        let denom = denom.reshape(const_shape![BM, 1]).broadcast(y.shape());
        y.store(num / denom);
    }

    #[cuprum::tile::entry()]
    fn hgemm<const BM: i32, const BN: i32, const BK: i32>(
        z: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f16, { [-1, -1] }>,
        y: &Tensor<f16, { [-1, -1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let k: i32 = x.shape()[1];
        let mut acc: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
        for i in 0i32..ceil_div(k, BK) {
            let a: Tile<f16, { [BM, BK] }> = x.partition(const_shape![BM, BK]).load([pid.0, i]);
            let b: Tile<f16, { [BK, BN] }> = y.partition(const_shape![BK, BN]).load([i, pid.1]);
            acc = mma(a, b, acc);
        }
        z.store(acc);
    }

    fn doubled<const S: [i32; 1]>(t: Tile<f32, S>) -> Tile<f32, S> {
        let u: Tile<f32, S> = t + t;
        return u;
    }

    #[cuprum::tile::entry()]
    fn twice<const B: i32>(out: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>) {
        let t = load_tile_like(x, out);
        out.store(doubled(t));
    }

    #[cuprum::tile::entry()]
    fn chain<const BM: i32, const BN: i32, const D: i32>(
        out: &mut Tensor<f32, { [BM, D] }>,
        q: &Tensor<f16, { [-1, -1] }>,
        k: &Tensor<f16, { [-1, -1] }>,
        v: &Tensor<f16, { [-1, -1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let tq: Tile<f16, { [BM, D] }> = q.partition(const_shape![BM, D]).load([pid.0, 0i32]);
        let n: i32 = k.shape()[0];
        let mut acc: Tile<f32, { [BM, D] }> = constant(0.0f32, const_shape![BM, D]);
        for j in 0i32..ceil_div(n, BN) {
            let kt: Tile<f16, { [BN, D] }> = k.partition(const_shape![BN, D]).load([j, 0i32]);
            let kt: Tile<f16, { [D, BN] }> = kt.transpose();
            let s: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
            let s: Tile<f32, { [BM, BN] }> = mma(tq, kt, s);
            let p: Tile<f16, { [BM, BN] }> = convert_tile(s);
            let vt: Tile<f16, { [BN, D] }> = v.partition(const_shape![BN, D]).load([j, 0i32]);
            acc = mma(p, vt, acc);
        }
        out.store(acc);
    }
}"#;

/// The 1-based line of `SOURCE` that contains `text` (once).
fn line_of(text: &str) -> u32 {
    let hits: Vec<usize> = SOURCE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(text))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(hits.len(), 1, "`{text}` is on one line");
    hits[0] as u32
}

fn compiled(lines: Option<&str>) -> TileModule {
    let module: syn::ItemMod = syn::parse_str(SOURCE).unwrap_or_else(|e| panic!("{e}"));
    let m = cuprum_tile_front::compile_module_with_lines(&module, lines.map(String::from))
        .unwrap_or_else(|e| panic!("{e}"))
        .module;
    validate_module(&m).unwrap_or_else(|e| panic!("{e}"));
    m
}

/// The markers of `block` and its nested blocks, in order: (line, column).
fn markers(block: &Block) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    block.visit(&mut |s| {
        if let Stmt::SourceLine { file, line, column } = s {
            assert_eq!(file, FILE);
            out.push((*line, *column));
        }
    });
    out
}

/// The PTX of `kernel` lowered with `options`, optimized, for `target`; assembled by ptxas
/// where it is found.
fn ptx(kernel: &cuprum_tile_ir::TileKernel, options: &LowerOptions, target: Target) -> String {
    let mut lowered = lower_with(kernel, options).unwrap_or_else(|e| panic!("{e}"));
    cuprum_opt::optimize_kernel(&mut lowered.kernel);
    let module = cuprum_ir::Module {
        kernels: vec![lowered.kernel],
    };
    let ptx = cuprum_ptx::write_module(&module, target).unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = cuprum_testkit::ptxas::check(&ptx, target.name()) {
        panic!("ptxas ({}): {e}\n{ptx}", target.name());
    }
    ptx
}

/// The lines of `.loc` directives in `ptx` (file 1 only).
fn loc_lines(ptx: &str) -> Vec<u32> {
    ptx.lines()
        .filter_map(|l| l.trim().strip_prefix(".loc 1 "))
        .filter_map(|rest| rest.split(' ').next()?.parse().ok())
        .collect()
}

/// The lines of `ptx` but its line information.
fn without_lines(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter(|l| !l.trim_start().starts_with(".loc") && !l.trim_start().starts_with(".file"))
        .collect()
}

/// Asserts that `a` and `b` are the same lines, naming the first that differs.
#[track_caller]
fn assert_same(a: &[&str], b: &[&str], what: &str) {
    let first = a.iter().zip(b).position(|(x, y)| x != y);
    assert!(
        first.is_none() && a.len() == b.len(),
        "{what}: line {} differs ({:?} vs {:?}), {} vs {} lines",
        first.unwrap_or(a.len().min(b.len())) + 1,
        first.map(|i| a[i]),
        first.map(|i| b[i]),
        a.len(),
        b.len()
    );
}

#[test]
fn tile_statements_carry_their_lines_into_the_ptx() {
    let m = compiled(Some(FILE));
    let softmax = kernel(&m, "softmax");
    let seen = markers(&softmax.body);
    let want = [
        "let tile_x: Tile",
        "let tile_x_max: Tile<f32, { [BM] }>",
        "let tile_x_max: Tile<f32, { [BM, BN] }>",
        "let num:",
        "let denom: Tile",
        "let denom = denom",
        "y.store(num / denom)",
    ]
    .map(line_of);
    let lines: Vec<u32> = seen.iter().map(|&(l, _)| l).collect();
    assert_eq!(lines, want, "one marker per statement, in order");
    // Columns from 1: the statements start at the body's indentation (9).
    assert!(seen.iter().all(|&(_, c)| c == 9), "{seen:?}");

    // Kept by specialization, and turned into `.loc`s before each statement's code.
    let k = specialized(&m, "softmax", &[2, 128], &[]);
    assert_eq!(markers(&k.body), seen, "specialization keeps the markers");
    for target in [Target::Sm80, Target::Sm90] {
        let text = ptx(&k, &LowerOptions::default(), target);
        assert!(text.contains(&format!(".file 1 \"{FILE}\"")), "{text}");
        let locs = loc_lines(&text);
        for line in want {
            assert!(locs.contains(&line), "a .loc for line {line}: {locs:?}");
        }
        // The store of the last line follows its `.loc`.
        let store_loc = text
            .find(&format!(".loc 1 {} ", want[6]))
            .unwrap_or(usize::MAX);
        let store = text.rfind("st.global").unwrap_or(0);
        assert!(
            store_loc < store,
            "the store follows its line's .loc:\n{text}"
        );
    }
}

#[test]
fn an_inlined_helper_carries_its_own_lines() {
    let m = compiled(Some(FILE));
    let lines: Vec<u32> = markers(&kernel(&m, "twice").body)
        .iter()
        .map(|&(l, _)| l)
        .collect();
    let want = [
        "let t = load_tile_like(x, out)",
        "out.store(doubled(t))",
        "let u: Tile<f32, S> = t + t",
        "return u;",
    ]
    .map(line_of);
    assert_eq!(lines, want, "the call's line, then the helper's");
}

#[test]
fn without_the_request_there_are_no_markers() {
    let m = compiled(None);
    for k in &m.kernels {
        assert!(markers(&k.body).is_empty(), "{}", k.name);
    }
    let k = specialized(&m, "softmax", &[2, 128], &[]);
    let text = ptx(&k, &LowerOptions::default(), Target::Sm80);
    assert!(!text.contains(".file") && !text.contains(".loc"), "{text}");
}

/// The options of a Hopper launch whose three tensors a tensor map can describe (what the
/// GEMM recipe needs), or not.
fn hopper(tensor_maps: bool) -> LowerOptions {
    let facts = TensorFacts {
        aligned_runs: true,
        tensor_map: tensor_maps,
        size_divisors: Vec::new(),
    };
    LowerOptions {
        compute_capability: Some((9, 0)),
        tensor_facts: vec![facts; 3],
        ..LowerOptions::default()
    }
}

#[test]
fn line_information_changes_no_instruction() {
    let plain = compiled(None);
    let lined = compiled(Some(FILE));
    let cases = [
        (
            "softmax",
            vec![2, 128],
            LowerOptions::default(),
            Target::Sm80,
        ),
        (
            "softmax",
            vec![1, 1024],
            LowerOptions::default(),
            Target::Sm90,
        ),
        (
            "hgemm",
            vec![64, 64, 32],
            LowerOptions::default(),
            Target::Sm80,
        ),
        // The general lowering with Hopper's options (warps chosen: no whole-kernel recipe).
        (
            "hgemm",
            vec![64, 64, 64],
            LowerOptions {
                num_warps: Some(4),
                ..hopper(false)
            },
            Target::Sm90a,
        ),
        // The whole-kernel GEMM recipe (TMA, mbarriers, warp specialization).
        ("hgemm", vec![128, 128, 64], hopper(true), Target::Sm90a),
        // Chained products on Hopper: `wgmma`s whose operands a cp.async ring copies an
        // iteration ahead (the ring's analysis reads the loop body's statements).
        ("chain", vec![64, 64, 128], hopper(false), Target::Sm90a),
        (
            "chain",
            vec![64, 64, 128],
            LowerOptions::default(),
            Target::Sm80,
        ),
    ];
    for (name, consts, options, target) in cases {
        let without = ptx(&specialized(&plain, name, &consts, &[]), &options, target);
        let with = ptx(&specialized(&lined, name, &consts, &[]), &options, target);
        if name == "chain" && target == Target::Sm90a {
            assert!(with.contains("wgmma.mma_async"), "chain: wgmma");
            assert!(
                with.contains("cp.async.commit_group"),
                "chain: a cp.async ring"
            );
        }
        assert!(
            !loc_lines(&with).is_empty(),
            "{name} {consts:?}: lines in the PTX"
        );
        assert_same(
            &without_lines(&with),
            &without.lines().collect::<Vec<_>>(),
            &format!(
                "{name} {consts:?} on {}: the same PTX but for .file/.loc",
                target.name()
            ),
        );
    }
}

#[test]
fn the_gemm_recipe_still_finds_a_gemm_with_markers() {
    let k = specialized(&compiled(Some(FILE)), "hgemm", &[128, 128, 64], &[]);
    let text = ptx(&k, &hopper(true), Target::Sm90a);
    // The recipe's signature: tensor maps copied by TMA into an mbarrier ring.
    assert!(text.contains("cp.async.bulk.tensor"), "{text}");
    assert!(text.contains("mbarrier"), "{text}");
    // The prologue's statements keep their lines.
    let locs = loc_lines(&text);
    assert!(
        locs.contains(&line_of("let k: i32")),
        "the prologue's lines: {locs:?}"
    );
}
