//! Line information changes no result: random tile programs with a `SourceLine` marker
//! before every statement of every block (what the front end writes under
//! `CUPRUM_LINEINFO`, and more: closures' bodies and loops' too) run three ways and agree
//! bit for bit as the programs without them do, and their lowered, optimized PTX is the
//! unmarked program's but for the `.file`/`.loc` directives.

mod common;

use common::check_all;
use cuprum_testkit::poison;
use cuprum_tile_fuzz::generate::Config;
use cuprum_tile_fuzz::{Case, generate};
use cuprum_tile_ir::{Block, Combine, Op, Stmt};

const FILE: &str = "/src/fuzz.rs";

/// `block` with a marker before each statement (line numbers counting up from `next`).
fn mark(block: &mut Block, next: &mut u32) {
    let stmts = std::mem::take(&mut block.stmts);
    for mut s in stmts {
        block.stmts.push(Stmt::SourceLine {
            file: FILE.into(),
            line: *next,
            column: 1,
        });
        *next += 1;
        match &mut s {
            Stmt::If {
                then, otherwise, ..
            } => {
                mark(then, next);
                mark(otherwise, next);
            }
            Stmt::For { body, .. } | Stmt::Loop { body, .. } | Stmt::ForTiles { body, .. } => {
                mark(body, next)
            }
            Stmt::Def {
                op:
                    Op::Reduce {
                        combine: Combine::Closure { body, .. },
                        ..
                    },
                ..
            } => mark(body, next),
            _ => {}
        }
        block.stmts.push(s);
    }
}

fn marked(case: &Case) -> Case {
    let mut c = case.clone();
    mark(&mut c.kernel.body, &mut 1);
    cuprum_tile_ir::validate_kernel(&c.kernel).unwrap_or_else(|e| panic!("{e}"));
    c
}

/// The case's kernel lowered, optimized and written for sm_80.
fn ptx(case: &Case) -> String {
    let mut lowered = cuprum_tile_lower::lower_with(&case.kernel, &case.options)
        .unwrap_or_else(|e| panic!("seed {}: {e}", case.seed));
    cuprum_opt::optimize_kernel(&mut lowered.kernel);
    let module = cuprum_ir::Module {
        kernels: vec![lowered.kernel],
    };
    cuprum_ptx::write_module(&module, cuprum_ptx::Target::Sm80)
        .unwrap_or_else(|e| panic!("seed {}: {e}", case.seed))
}

/// Checks `count` random programs from seed `first`, made with `cfg`, with and without
/// markers: the same results three ways, the same PTX but for `.file`/`.loc`.
fn markers_change_nothing(first: u64, count: u64, cfg: &Config) {
    let cases: Vec<Case> = (first..first + count)
        .map(|s| generate(s, cfg).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let with: Vec<Case> = cases.iter().map(marked).collect();
    check_all("random programs with line markers", &with);
    for (plain, lined) in cases.iter().zip(&with) {
        let (a, b) = (ptx(plain), ptx(lined));
        assert!(b.contains(&format!(".file 1 \"{FILE}\"")), "{b}");
        let stripped: Vec<&str> = b
            .lines()
            .filter(|l| !l.trim_start().starts_with(".loc") && !l.trim_start().starts_with(".file"))
            .collect();
        let plain_lines: Vec<&str> = a.lines().collect();
        let first = stripped.iter().zip(&plain_lines).position(|(x, y)| x != y);
        assert!(
            first.is_none() && stripped.len() == plain_lines.len(),
            "seed {}: the PTX differs at line {:?} ({:?} vs {:?})",
            plain.seed,
            first.map(|i| i + 1),
            first.map(|i| stripped[i]),
            first.map(|i| plain_lines[i]),
        );
    }
}

#[test]
fn markers_change_no_result_and_no_instruction() {
    markers_change_nothing(0x11e5_0000, 60, &Config::ci(poison::BYTE));
}

#[test]
fn markers_change_nothing_in_larger_programs() {
    // Larger programs: loops the optimizer unrolls, with a `break` (and its marker) inside.
    markers_change_nothing(0x11e6_0000, 40, &Config::large(poison::BYTE));
}
