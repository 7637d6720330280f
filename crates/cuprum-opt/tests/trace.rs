//! `CUPRUM_OPT_TRACE`: the pass pipeline's trace says each pass's time and whether it changed
//! the kernel, shows the IR between passes when asked, and changes nothing.

mod common;

use common::K;
use cuprum_ir::*;
use cuprum_opt::trace::Trace;

fn kernel() -> Kernel {
    let mut k = K::new("traced_kernel");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", ScalarType::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, ScalarType::U32, i);
    let (a, b) = (k.u32(3), k.u32(4));
    let s = k.add(a, b);
    let r = k.add(v, s);
    k.store(y, i, r);
    k.finish()
}

#[test]
fn the_trace_values_parse() {
    assert_eq!(
        Trace::parse("time"),
        Some(Trace {
            ir: false,
            kernel: None
        })
    );
    assert_eq!(
        Trace::parse("ir:sgemm"),
        Some(Trace {
            ir: true,
            kernel: Some("sgemm".into())
        })
    );
    assert_eq!(Trace::parse("off"), None);
    assert_eq!(Trace::parse(""), None);
    let t = Trace {
        ir: false,
        kernel: Some("gemm".into()),
    };
    assert!(t.wants("sgemm_tiled") && !t.wants("vecadd"));
}

#[test]
fn the_trace_names_every_pass_and_shows_the_ir_between_them() {
    let mut plain = kernel();
    cuprum_opt::optimize_kernel(&mut plain);
    let mut traced = kernel();
    let mut lines = Vec::new();
    let trace = Trace {
        ir: true,
        kernel: None,
    };
    cuprum_opt::run_passes_traced(&mut traced, cuprum_opt::PASSES, Some(&trace), &mut |l| {
        lines.push(l.to_string())
    });
    assert_eq!(
        print_kernel(&plain),
        print_kernel(&traced),
        "tracing changed the result"
    );
    let pass_lines: Vec<&String> = lines.iter().filter(|l| l.contains(" pass ")).collect();
    assert_eq!(pass_lines.len(), cuprum_opt::PASSES.len());
    for (line, pass) in pass_lines.iter().zip(cuprum_opt::PASSES) {
        assert!(
            line.contains(&format!("`{}`", pass.name)) && line.contains(" ms, "),
            "{line}"
        );
    }
    assert!(
        lines[0].contains("before the passes") && lines[0].contains("Add"),
        "{}",
        lines[0]
    );
    // Folding changed the kernel first, so the IR after it follows its line: 3 + 4 is 7.
    let fold = lines
        .iter()
        .position(|l| l.contains("pass 0 `fold`: ") && l.ends_with(", changed"));
    let fold = fold.unwrap_or_else(|| panic!("fold did not change the kernel: {lines:#?}"));
    assert!(
        lines[fold + 1].contains("const 7u32"),
        "{}",
        lines[fold + 1]
    );
}
