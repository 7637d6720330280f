//! Line information: the front end marks each statement of a kernel with its line when asked
//! (`compile_source_with_lines`), the optimizer keeps the markers, and the PTX writer turns
//! them into one `.file` per source file and `.loc` directives before the statements' code,
//! which ptxas assembles; without the request, nothing changes. Generic kernels, compiled
//! per specialization at launch (`compile_specialized_with_lines`), carry lines too.

use cuprum_ir::{Module, Stmt};
use cuprum_ptx::{Target, write_module};

const FILE: &str = "/work/src/kernels.rs";

/// Line 5 reads the index, 6 branches, 7 computes and stores.
const SOURCE: &str = "mod kernels {\n    use super::*;\n    #[kernel]\n    pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {\n        let i = thread::index_1d();\n        if let Some(out) = y.get_mut(i) {\n            *out = a * x[i.get()] + *out;\n        }\n    }\n}";

fn compiled(line_info: Option<&str>) -> Module {
    let mut ir = cuprum_front::compile_source_with_lines(SOURCE, line_info.map(String::from))
        .unwrap_or_else(|e| panic!("the kernel compiles: {e}"))
        .ir;
    cuprum_opt::optimize(&mut ir);
    ir
}

fn lines(block: &cuprum_ir::Block, out: &mut Vec<u32>) {
    for s in &block.stmts {
        match s {
            Stmt::SourceLine { file, line, .. } => {
                assert_eq!(file, FILE);
                out.push(*line);
            }
            Stmt::If {
                then, otherwise, ..
            } => {
                lines(then, out);
                lines(otherwise, out);
            }
            Stmt::Loop { body } => lines(body, out),
            _ => {}
        }
    }
}

#[test]
fn statements_carry_their_lines_through_the_optimizer_into_the_ptx() {
    let ir = compiled(Some(FILE));
    let mut seen = Vec::new();
    lines(&ir.kernels[0].body, &mut seen);
    assert_eq!(seen, [5, 6, 7], "the markers the optimized kernel keeps");
    for target in [Target::Sm80, Target::Sm90] {
        let ptx = write_module(&ir, target).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            ptx.contains(&format!(".file 1 \"{FILE}\"")),
            "one .file for the source:\n{ptx}"
        );
        let locs: Vec<&str> = ptx
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with(".loc"))
            .collect();
        assert_eq!(locs, [".loc 1 5 0", ".loc 1 6 0", ".loc 1 7 0"], "{ptx}");
        // The store of line 7 comes after its `.loc`.
        let loc7 = ptx.find(".loc 1 7 0").unwrap_or(usize::MAX);
        let store = ptx.find("st.global").unwrap_or(0);
        assert!(loc7 < store, "the store follows line 7's .loc:\n{ptx}");
        cuprum_testkit::ptxas::check(&ptx, target.name()).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn without_line_information_the_ptx_is_unchanged() {
    let plain = compiled(None);
    let mut seen = Vec::new();
    lines(&plain.kernels[0].body, &mut seen);
    assert!(seen.is_empty(), "no markers unless asked");
    let ptx = write_module(&plain, Target::Sm80).unwrap_or_else(|e| panic!("{e}"));
    assert!(!ptx.contains(".file") && !ptx.contains(".loc"), "{ptx}");
    // The same instructions either way (a definition may be placed on the other side of a
    // marked branch): line information adds directives, not work.
    let with = write_module(&compiled(Some(FILE)), Target::Sm80).unwrap_or_else(|e| panic!("{e}"));
    let strip = |p: &str| -> Vec<String> {
        let mut l: Vec<String> = p
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with(".loc") && !l.starts_with(".file"))
            .map(String::from)
            .collect();
        l.sort();
        l
    };
    assert_eq!(strip(&ptx), strip(&with));
}

/// A generic kernel: line 5 reads the index, 6 branches, 7 scales and stores.
const GENERIC: &str = "mod kernels {\n    use super::*;\n    #[kernel]\n    pub fn scale<T: Copy + core::ops::Mul<Output = T>, const K: usize>(a: T, x: &[T], mut y: DisjointSlice<T>) {\n        let i = thread::index_1d();\n        if let Some(out) = y.get_mut(i) {\n            *out = a * x[i.get() % K];\n        }\n    }\n}";

fn specialized(line_info: Option<&str>) -> Module {
    let spec = cuprum_front::Specialization {
        types: vec![("T".into(), cuprum_ir::ScalarType::F32)],
        consts: vec![("K".into(), 16)],
    };
    let mut ir = cuprum_front::compile_specialized_with_lines(
        GENERIC,
        "scale",
        &spec,
        line_info.map(String::from),
    )
    .unwrap_or_else(|e| panic!("the specialization compiles: {e}"));
    cuprum_opt::optimize(&mut ir);
    ir
}

#[test]
fn a_generic_kernels_specialization_carries_its_lines() {
    let ir = specialized(Some(FILE));
    let mut seen = Vec::new();
    lines(&ir.kernels[0].body, &mut seen);
    assert_eq!(
        seen,
        [5, 6, 7],
        "the markers the optimized specialization keeps"
    );
    for target in [Target::Sm80, Target::Sm90] {
        let ptx = write_module(&ir, target).unwrap_or_else(|e| panic!("{e}"));
        assert!(ptx.contains(&format!(".file 1 \"{FILE}\"")), "{ptx}");
        let locs: Vec<&str> = ptx
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with(".loc"))
            .collect();
        assert_eq!(locs, [".loc 1 5 0", ".loc 1 6 0", ".loc 1 7 0"], "{ptx}");
        cuprum_testkit::ptxas::check(&ptx, target.name()).unwrap_or_else(|e| panic!("{e}"));
    }
    let plain = write_module(&specialized(None), Target::Sm80).unwrap_or_else(|e| panic!("{e}"));
    assert!(!plain.contains(".loc"), "no lines unless asked:\n{plain}");
}
